#include "request_common.h"

#include <charconv>
#include <filesystem>

#include "adapters/lora_file.h"
#include "base/error.h"
#include "name_maps.h"
#include "request_error.h"

namespace fs = std::filesystem;

namespace server {
namespace {

const char* const kLoraExtensions[] = {".safetensors", ".gguf", ".pt", ".ckpt"};

bool inside(const fs::path& dir, const fs::path& file) {
    const std::string d = dir.lexically_normal().string(), f = file.lexically_normal().string();
    return f.size() > d.size() && f.compare(0, d.size(), d) == 0 &&
           (d.back() == '/' || f[d.size()] == '/');
}

}  // namespace

int check_image_side(int value, const std::string& field, const ServerLimits& limits) {
    if (value < limits.min_side || value > limits.max_side)
        throw bad_field(field, "must be between " + std::to_string(limits.min_side) + " and " +
                                   std::to_string(limits.max_side) + ", got " +
                                   std::to_string(value));
    return value;  // the library aligns it up to the model's grid
}

std::optional<int> read_image_side(const FieldReader& f, const std::string& key,
                                   const ServerLimits& limits) {
    auto v = f.integer(key, -1000000, 1000000);
    if (!v) return std::nullopt;
    return check_image_side(*v, f.name(key), limits);
}

int parse_int_text(const std::string& text, const std::string& field, int min, int max) {
    int out = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        throw bad_field(field, "expected an integer, got '" + text.substr(0, 40) + "'");
    if (out < min || out > max)
        throw bad_field(field, "must be between " + std::to_string(min) + " and " +
                                   std::to_string(max) + ", got " + std::to_string(out));
    return out;
}

std::optional<std::pair<int, int>> parse_size(const std::string& text, const std::string& field,
                                              const ServerLimits& limits) {
    if (text.empty() || text == "auto") return std::nullopt;
    const size_t x = text.find('x');
    if (x == std::string::npos || x == 0 || x + 1 >= text.size())
        throw bad_field(field,
                        "expected WIDTHxHEIGHT such as 512x512, got '" + text.substr(0, 40) + "'");
    const int w = parse_int_text(text.substr(0, x), field, 1, 1000000);
    const int h = parse_int_text(text.substr(x + 1), field, 1, 1000000);
    check_image_side(w, field, limits);
    check_image_side(h, field, limits);
    return std::pair{w, h};
}

void apply_sampler_name(const std::string& name, const std::string& field, sd_sample_params_t& s,
                        bool scheduler_given) {
    auto choice = sampler_from_name(name);
    if (!choice)
        throw bad_field(field, "unknown sampler '" + name.substr(0, 60) +
                                   "' (GET /sdapi/v1/samplers lists them)");
    s.sample_method = choice->method;
    if (choice->scheduler != SCHEDULER_COUNT && !scheduler_given) s.scheduler = choice->scheduler;
}

void apply_scheduler_name(const std::string& name, const std::string& field,
                          sd_sample_params_t& s) {
    auto scheduler = scheduler_from_name(name);
    if (!scheduler)
        throw bad_field(field, "unknown scheduler '" + name.substr(0, 60) +
                                   "' (GET /sdapi/v1/schedulers lists them)");
    s.scheduler = *scheduler;
}

std::string resolve_lora_path(const std::string& lora_dir, const std::string& name,
                              const std::string& field) {
    if (name.empty()) throw bad_field(field, "the LoRA name is empty");
    if (lora_dir.empty()) throw bad_field(field, "the server has no --lora-model-dir");
    const fs::path dir = fs::absolute(lora_dir).lexically_normal();
    const fs::path wanted = (dir / name).lexically_normal();
    if (fs::path(name).is_absolute() || !inside(dir, wanted))
        throw bad_field(field, "'" + name + "' is outside the LoRA folder");
    std::error_code ec;
    std::string found;
    if (fs::is_regular_file(wanted, ec)) found = wanted.string();
    for (const char* ext : kLoraExtensions) {
        fs::path candidate = wanted;
        candidate += ext;
        if (found.empty() && fs::is_regular_file(candidate, ec)) found = candidate.string();
    }
    if (found.empty())
        throw bad_field(field, "no LoRA '" + name + "' in the LoRA folder (GET /sdapi/v1/loras)");
    try {
        sd::check_lora_file(found);  // a truncated or foreign file is the request's fault
    } catch (const sd::Error& e) {
        throw bad_field(field, e.what());
    }
    return found;
}

std::vector<cli::LoraEntry> read_loras(const FieldReader& f, const std::string& key,
                                       const std::string& lora_dir) {
    std::vector<cli::LoraEntry> out;
    if (!f.has(key)) return out;
    const nlohmann::json& list = f.json().at(key);
    if (!list.is_array()) throw bad_field(f.name(key), "expected an array of {path, multiplier}");
    for (size_t i = 0; i < list.size(); ++i) {
        const FieldReader item(list[i], f.name(key) + "[" + std::to_string(i) + "]");
        auto path = item.string("path");
        if (!path) throw bad_field(item.name("path"), "required");
        cli::LoraEntry entry;
        entry.path = resolve_lora_path(lora_dir, *path, item.name("path"));
        entry.multiplier = static_cast<float>(item.number("multiplier", -100, 100).value_or(1.0));
        entry.high_noise = item.boolean("is_high_noise").value_or(false);
        out.push_back(entry);
    }
    return out;
}

void apply_output_format(const std::string& name, const std::string& field, OutputOptions& out) {
    auto format = output_format_from_name(name);
    if (!format)
        throw bad_field(field, "expected png, jpeg or webp, got '" + name.substr(0, 40) + "'");
    out.format = *format;
}

}  // namespace server
