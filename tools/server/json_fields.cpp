#include "json_fields.h"

#include <cmath>
#include <limits>

#include "request_error.h"

namespace server {
namespace {

using nlohmann::json;

std::string range_text(double min, double max) {
    auto text = [](double v) {
        if (v == std::floor(v) && std::fabs(v) < 1e15)
            return std::to_string(static_cast<int64_t>(v));
        std::string s = std::to_string(v);
        while (s.size() > 1 && s.back() == '0') s.pop_back();
        return s;
    };
    return "between " + text(min) + " and " + text(max);
}

const char* type_name(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::string:
            return "a string";
        case json::value_t::array:
            return "an array";
        case json::value_t::object:
            return "an object";
        default:
            return "a number";
    }
}

[[noreturn]] void wrong_type(const json& v, const std::string& field, const char* expected) {
    throw bad_field(field, std::string("expected ") + expected + ", got " + type_name(v));
}

int64_t read_int64(const json& v, const std::string& field) {
    if (v.is_number_integer()) {
        if (v.is_number_unsigned() &&
            v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw bad_field(field, "the integer is too large");
        return v.get<int64_t>();
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15)
            throw bad_field(field, "expected an integer, got " + v.dump());
        return static_cast<int64_t>(d);
    }
    wrong_type(v, field, "an integer");
}

}  // namespace

double read_number(const json& v, const std::string& field, double min, double max) {
    if (!v.is_number()) wrong_type(v, field, "a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) throw bad_field(field, "expected a finite number");
    if (d < min || d > max) throw bad_field(field, "must be " + range_text(min, max));
    return d;
}

int read_integer(const json& v, const std::string& field, int min, int max) {
    const int64_t i = read_int64(v, field);
    if (i < min || i > max)
        throw bad_field(field, "must be " + range_text(min, max) + ", got " + std::to_string(i));
    return static_cast<int>(i);
}

FieldReader::FieldReader(const nlohmann::json& object, std::string path)
    : object_(&object), path_(std::move(path)) {
    if (!object.is_object()) wrong_type(object, path_.empty() ? "body" : path_, "an object");
}

std::string FieldReader::name(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
}

const nlohmann::json* FieldReader::find(const std::string& key) const {
    auto it = object_->find(key);
    if (it == object_->end() || it->is_null()) return nullptr;
    return &*it;
}

bool FieldReader::has(const std::string& key) const {
    return find(key) != nullptr;
}

std::optional<std::string> FieldReader::string(const std::string& key) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong_type(*v, name(key), "a string");
    return v->get<std::string>();
}

std::optional<int> FieldReader::integer(const std::string& key, int min, int max) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return read_integer(*v, name(key), min, max);
}

std::optional<int64_t> FieldReader::int64(const std::string& key) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return read_int64(*v, name(key));
}

std::optional<double> FieldReader::number(const std::string& key, double min, double max) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return read_number(*v, name(key), min, max);
}

std::optional<bool> FieldReader::boolean(const std::string& key) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    if (v->is_boolean()) return v->get<bool>();
    if (v->is_number_integer()) {
        const int64_t i = read_int64(*v, name(key));
        if (i == 0 || i == 1) return i == 1;
    }
    wrong_type(*v, name(key), "true or false");
}

std::optional<std::vector<double>> FieldReader::numbers(const std::string& key, double min,
                                                        double max) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) wrong_type(*v, name(key), "an array of numbers");
    std::vector<double> out;
    for (size_t i = 0; i < v->size(); ++i)
        out.push_back(read_number((*v)[i], name(key) + "[" + std::to_string(i) + "]", min, max));
    return out;
}

std::optional<std::vector<int>> FieldReader::integers(const std::string& key, int min,
                                                      int max) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) wrong_type(*v, name(key), "an array of integers");
    std::vector<int> out;
    for (size_t i = 0; i < v->size(); ++i)
        out.push_back(read_integer((*v)[i], name(key) + "[" + std::to_string(i) + "]", min, max));
    return out;
}

std::optional<std::vector<std::string>> FieldReader::strings(const std::string& key) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) wrong_type(*v, name(key), "an array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < v->size(); ++i) {
        const nlohmann::json& item = (*v)[i];
        if (!item.is_string())
            wrong_type(item, name(key) + "[" + std::to_string(i) + "]", "a string");
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::optional<FieldReader> FieldReader::object(const std::string& key) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return FieldReader(*v, name(key));
}

}  // namespace server

namespace server {

nlohmann::json parse_json_object(const std::string& text, const std::string& field) {
    constexpr int kMaxDepth = 32;
    const std::string what = field.empty() ? "the request body" : field;
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw RequestError(400, field.empty() ? "empty_body" : "invalid_json", field,
                           what + " is empty; expected a JSON object");
    nlohmann::json::parser_callback_t limit_depth = [&](int depth, nlohmann::json::parse_event_t,
                                                        nlohmann::json&) {
        if (depth > kMaxDepth)
            throw RequestError(
                400, "invalid_json", field,
                what + " is nested deeper than " + std::to_string(kMaxDepth) + " levels");
        return true;
    };
    nlohmann::json value;
    try {
        value = nlohmann::json::parse(text, limit_depth);
    } catch (const nlohmann::json::parse_error& e) {
        throw RequestError(400, "invalid_json", field,
                           what + " is not valid JSON (at byte " + std::to_string(e.byte) + ")");
    }
    if (!value.is_object())
        throw RequestError(400, "invalid_json", field, what + " must be a JSON object");
    return value;
}

}  // namespace server
