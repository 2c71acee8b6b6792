#include "redis_records.h"

#include <limits>
#include <stdexcept>

namespace server::redis_records {
namespace {

using nlohmann::json;

json parse_object(const std::string& text, const char* what) {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object())
        throw std::runtime_error(std::string("the job's ") + what + " is not a JSON object");
    return j;
}

// Field readers: a missing field is the default; a field of another type is an error.
template <class T>
T number(const json& j, const char* key, T fallback, const char* what) {
    auto it = j.find(key);
    if (it == j.end()) return fallback;
    const bool fits =
        it->is_number_integer() &&
        (it->is_number_unsigned()
             ? it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
             : it->get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                   it->get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max()));
    if (!fits)
        throw std::runtime_error(std::string("the job's ") + what + " holds a bad \"" + key + "\"");
    return it->get<T>();
}

std::string text_field(const json& j, const char* key, const char* what) {
    auto it = j.find(key);
    if (it == j.end()) return {};
    if (!it->is_string())
        throw std::runtime_error(std::string("the job's ") + what + " holds a bad \"" + key + "\"");
    return it->get<std::string>();
}

}  // namespace

std::string payload_text(const RequestSource& source, int64_t seed) {
    return json{{"kind", source.kind}, {"body", source.body}, {"seed", seed}}.dump();
}

Payload read_payload(const std::string& text) {
    const json p = parse_object(text, "payload");
    Payload out;
    out.source.kind = text_field(p, "kind", "payload");
    if (out.source.kind.empty())
        throw std::runtime_error("the job's payload names no request kind");
    auto body = p.find("body");
    if (body == p.end()) throw std::runtime_error("the job's payload has no request body");
    out.source.body = *body;
    out.seed = number<int64_t>(p, "seed", 0, "payload");
    return out;
}

std::string result_text(const std::vector<ResultImage>& images) {
    json out = json::array();
    for (const ResultImage& i : images)
        out.push_back({{"b64", i.b64},
                       {"seed", i.seed},
                       {"parameters", i.parameters},
                       {"width", i.width},
                       {"height", i.height},
                       {"frames", i.frames}});
    return out.dump();
}

std::shared_ptr<const std::vector<ResultImage>> read_result(const std::string& text) {
    auto images = std::make_shared<std::vector<ResultImage>>();
    if (text.empty()) return images;
    const json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!list.is_array()) throw std::runtime_error("the job's stored result is not a JSON array");
    for (const json& j : list) {
        if (!j.is_object()) throw std::runtime_error("the job's stored result holds a non-object");
        ResultImage image;
        image.b64 = text_field(j, "b64", "result");
        image.seed = number<int64_t>(j, "seed", 0, "result");
        image.parameters = text_field(j, "parameters", "result");
        image.width = number<uint32_t>(j, "width", 0, "result");
        image.height = number<uint32_t>(j, "height", 0, "result");
        image.frames = number<int>(j, "frames", 0, "result");
        images->push_back(std::move(image));
    }
    return images;
}

std::string preview_text(const JobPreview& p) {
    return json{{"step", p.step},
                {"image", p.image},
                {"png", p.png_b64},
                {"width", p.width},
                {"height", p.height}}
        .dump();
}

std::shared_ptr<const JobPreview> read_preview(const std::string& text) {
    if (text.empty()) return nullptr;
    try {
        const json p = parse_object(text, "preview");
        return std::make_shared<const JobPreview>(
            JobPreview{number<int>(p, "step", 0, "preview"), number<int>(p, "image", 0, "preview"),
                       text_field(p, "png", "preview"), number<uint32_t>(p, "width", 0, "preview"),
                       number<uint32_t>(p, "height", 0, "preview")});
    } catch (const std::runtime_error&) {
        return nullptr;  // a preview is a courtesy: the job's status stands without it
    }
}

std::string heartbeat_text(const Heartbeat& beat) {
    return json{{"name", beat.name}, {"model", beat.model}, {"pid", beat.pid}, {"job", beat.job}}
        .dump();
}

Heartbeat read_heartbeat(const std::string& text) {
    return read_heartbeat_json(json::parse(text, nullptr, /*allow_exceptions=*/false));
}

Heartbeat read_heartbeat_json(const json& b) {
    Heartbeat out;
    if (!b.is_object()) return out;
    auto string_of = [&b](const char* key) {
        auto it = b.find(key);
        return it != b.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    out.name = string_of("name");
    out.model = string_of("model");
    out.job = string_of("job");
    try {
        out.pid = number<int>(b, "pid", 0, "heartbeat");
    } catch (const std::runtime_error&) {
        out.pid = 0;
    }
    return out;
}

}  // namespace server::redis_records
