// Typed, range-checked reads of request fields. Every wrong type or value is a
// RequestError naming the field by its full path ("sample_params.sample_steps"); a field
// that is absent or null reads as std::nullopt, so callers keep their defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace server {

class FieldReader {
  public:
    // `object` must be a JSON object; `path` is its own name ("" for the body).
    FieldReader(const nlohmann::json& object, std::string path = "");

    const nlohmann::json& json() const { return *object_; }
    // The full name of `key` for messages.
    std::string name(const std::string& key) const;
    // Present and not null.
    bool has(const std::string& key) const;

    std::optional<std::string> string(const std::string& key) const;
    // A JSON integer (or a number with an integral value) in [min, max].
    std::optional<int> integer(const std::string& key, int min, int max) const;
    std::optional<int64_t> int64(const std::string& key) const;
    // A finite number in [min, max].
    std::optional<double> number(const std::string& key, double min, double max) const;
    // true/false, or 0/1 as some webui clients send.
    std::optional<bool> boolean(const std::string& key) const;
    std::optional<std::vector<double>> numbers(const std::string& key, double min,
                                               double max) const;
    std::optional<std::vector<int>> integers(const std::string& key, int min, int max) const;
    std::optional<std::vector<std::string>> strings(const std::string& key) const;
    // A nested object (a RequestError when the field holds anything else).
    std::optional<FieldReader> object(const std::string& key) const;

  private:
    const nlohmann::json* find(const std::string& key) const;

    const nlohmann::json* object_;
    std::string path_;
};

// A JSON value as a number within [min, max], else a RequestError naming `field`.
double read_number(const nlohmann::json& value, const std::string& field, double min, double max);
int read_integer(const nlohmann::json& value, const std::string& field, int min, int max);

}  // namespace server

namespace server {

// Parses `text` as a JSON object of at most 32 nesting levels. A RequestError (code
// "invalid_json") naming `field` ("" for the body) otherwise.
nlohmann::json parse_json_object(const std::string& text, const std::string& field);

}  // namespace server
