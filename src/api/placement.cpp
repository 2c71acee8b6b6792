// backend / params_backend / max_vram / model_args: the reference's strings, read for a
// build whose one device is the CPU. Weights "on the CPU" are the mmapped files (Resident);
// "disk" reads each layer from the file for its forward (Streamed).
#include "api/placement.h"

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>

#include "api/c_enum.h"
#include "api/c_message.h"
#include "base/cpu_features.h"
#include "base/error.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "gpu/devices.h"

namespace sd::api {
namespace {

// The reference's component names (SDBackendModule), "clip"/"llm" as aliases of "te".
const char* const kComponents[] = {"diffusion",   "te",      "clip",       "llm",
                                   "clip_vision", "vae",     "controlnet", "photomaker",
                                   "upscaler",    "detector"};

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

bool known_component(const std::string& c) {
    return std::find(std::begin(kComponents), std::end(kComponents), c) != std::end(kComponents);
}

bool is_text_encoder(const std::string& c) {
    return c == "te" || c == "clip" || c == "llm";
}

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos) return trim(line.substr(colon + 1));
        }
    }
    return "CPU";
}

double ram_gib() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return 0.0;
    return static_cast<double>(pages) * static_cast<double>(page) / (1024.0 * 1024.0 * 1024.0);
}

std::string device_names() {
    std::string out;
    for (const Device& d : list_devices()) out += (out.empty() ? "" : ", ") + d.name;
    return out;
}

[[noreturn]] void fail_unknown_device(const std::string& name, const char* option) {
    const std::string& no_vulkan = gpu::vulkan_devices().unavailable;
    fail("%s: device '%s' does not exist in this build (devices: %s%s%s)", option, name.c_str(),
         device_names().c_str(), no_vulkan.empty() ? "" : "; no Vulkan: ", no_vulkan.c_str());
}

// The device `name` names: "" for the CPU, "vulkanN" for a Vulkan device of this machine. A
// Vulkan device asked for where there is no Vulkan (no loader, no device, a build without it)
// is the CPU, said in one line; any other name is an error naming the devices there are.
std::string device_of(const std::string& name, const char* option) {
    if (is_cpu_device(name)) return "";
    const std::string wanted = lower(trim(name));
    for (const gpu::DeviceInfo& d : gpu::vulkan_devices().devices)
        if (d.name == wanted) return d.name;
    const std::string& no_vulkan = gpu::vulkan_devices().unavailable;
    if (wanted.rfind("vulkan", 0) == 0 && !no_vulkan.empty()) {
        SD_LOG_WARN("%s: %s: no Vulkan (%s); running on the CPU", option, wanted.c_str(),
                    no_vulkan.c_str());
        return "";
    }
    fail_unknown_device(name, option);
}

void require_device(const std::string& name, const char* option) {
    (void)device_of(name, option);
}

// params_backend values: a device, or "disk" (weights stay in the file).
bool is_disk(const std::string& value, const char* option) {
    if (lower(value) == "disk") return true;
    require_device(value, option);
    return false;
}

bool to_bool(const std::string& key, const std::string& v) {
    if (v == "1" || v == "true") return true;
    if (v == "0" || v == "false") return false;
    fail("model_args: '%s' takes true or false, not '%s'", key.c_str(), v.c_str());
}

// max_vram's budget in bytes for the Vulkan devices (0: none; "-1" is the reference's auto,
// which here is no limit); a CPU entry has no effect.
uint64_t read_max_vram(const char* spec) {
    uint64_t budget = 0;
    for (const SpecEntry& e : parse_spec(spec, "max_vram")) {
        bool cpu = false;
        // A bare number applies to every device; "cpu=3.2" names one.
        std::string number = e.value;
        const size_t eq = number.find('=');
        if (e.component != "*" || eq != std::string::npos) {
            std::string device = e.component != "*" ? e.component : trim(number.substr(0, eq));
            if (e.component == "*") number = trim(number.substr(eq + 1));
            cpu = device_of(device, "max_vram").empty();
        }
        errno = 0;
        char* end = nullptr;
        const double gib = std::strtod(number.c_str(), &end);
        if (number.empty() || errno != 0 || *end != '\0')
            fail("max_vram: '%s' is not a number of GiB", number.c_str());
        if (!cpu && gib > 0) budget = static_cast<uint64_t>(gib * double(uint64_t{1} << 30));
    }
    return budget;
}

enum class ArgKind { Bool, Count, ComputeType, Path, QwenZeroCondT };

struct ModelArgKey {
    const char* name;
    ArgKind kind;
    bool ChromaOptions::*flag = nullptr;  // where a Bool goes (none: checked only)
    int ChromaOptions::*count = nullptr;  // where a Count goes
};

// The reference's keys, then ours.
constexpr ModelArgKey kModelArgKeys[] = {
    {"chroma_use_dit_mask", ArgKind::Bool, &ChromaOptions::dit_mask},
    {"chroma_use_t5_mask", ArgKind::Bool, &ChromaOptions::t5_mask},
    {"chroma_t5_mask_pad", ArgKind::Count, nullptr, &ChromaOptions::t5_mask_pad},
    {"qwen_image_zero_cond_t", ArgKind::QwenZeroCondT},
    {"compute_type", ArgKind::ComputeType},
    {"tokenizer_dir", ArgKind::Path},
};

// A whole number >= 0 that fits an int (chroma_t5_mask_pad).
int to_count(const std::string& key, const std::string& v) {
    errno = 0;
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || n < 0 || n > INT_MAX)
        fail("model_args: %s takes a whole number >= 0, not '%s'", key.c_str(), v.c_str());
    return static_cast<int>(n);
}

void read_model_arg(const ModelArgKey& key, const std::string& value, Placement& out) {
    switch (key.kind) {
        case ArgKind::Bool: {
            const bool on = to_bool(key.name, value);
            if (key.flag) out.chroma.*key.flag = on;
            break;
        }
        case ArgKind::Count:
            out.chroma.*key.count = to_count(key.name, value);
            break;
        case ArgKind::QwenZeroCondT:
            out.qwen_image_zero_cond_t = to_bool(key.name, value);
            break;
        case ArgKind::ComputeType:
            if (!parse_compute_type(value, &out.compute_type))
                fail("model_args: compute_type '%s': expected auto, f32 or bf16", value.c_str());
            break;
        case ArgKind::Path:
            out.tokenizer_dir = value;
            break;
    }
}

}  // namespace

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma - start));
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}

const std::string& model_args_keys() {
    static const std::string keys = [] {
        std::string out;
        for (const ModelArgKey& k : kModelArgKeys)
            out += (out.empty() ? "" : ", ") + std::string(k.name);
        return out;
    }();
    return keys;
}

void read_model_args(const char* args, Placement& out) {
    if (!args) return;
    for (const std::string& raw : split_list(args)) {
        const std::string item = trim(raw);
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos) fail("model_args: '%s' is not key=value", item.c_str());
        const std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
        const auto known = std::find_if(std::begin(kModelArgKeys), std::end(kModelArgKeys),
                                        [&](const ModelArgKey& k) { return key == k.name; });
        if (known == std::end(kModelArgKeys))
            fail("model_args: unknown key '%s' (known: %s)", key.c_str(),
                 model_args_keys().c_str());
        read_model_arg(*known, value, out);
    }
}

EngineOptions engine_options(const Placement& placement, const sd_ctx_ext_params_t& ext) {
    EngineOptions out;
    out.compute_type = placement.compute_type;
    const int compute_type = c_enum_int(ext.compute_type);
    if (compute_type != SD_COMPUTE_TYPE_COUNT) {
        const bool known = compute_type >= 0 && compute_type < SD_COMPUTE_TYPE_COUNT;
        const char* name =
            known ? sd_compute_type_name(static_cast<sd_compute_type_t>(compute_type)) : nullptr;
        if (!name || !parse_compute_type(name, &out.compute_type))
            fail("sd_ctx_ext_params_t.compute_type %d: expected auto, f32 or bf16 (or unset)",
                 compute_type);
    }
    out.tokenizer_dir = ext.tokenizer_dir && *ext.tokenizer_dir ? std::string(ext.tokenizer_dir)
                                                                : placement.tokenizer_dir;
    out.max_prompt_tokens = std::max(0, ext.max_prompt_tokens);
    return out;
}

std::vector<Device> list_devices() {
    const CpuFeatures& f = cpu_features();
    std::vector<Device> out{
        {"CPU", strfmt("%s (%s, %d cores, %.1f GiB RAM)", cpu_model_name().c_str(),
                       isa_name(best_supported_isa()), f.physical_cores, ram_gib())}};
    for (const gpu::DeviceInfo& d : gpu::vulkan_devices_with_free_memory().devices)
        out.push_back({d.name, !d.free_bytes ? d.description
                                             : strfmt("%s (%.1f GiB free)", d.description.c_str(),
                                                      *d.free_bytes / (1024.0 * 1024.0 * 1024.0))});
    return out;
}

bool is_cpu_device(const std::string& name) {
    const std::string n = lower(trim(name));
    return n == "cpu" || n == "default" || n == "auto";
}

std::vector<SpecEntry> parse_spec(const char* spec, const char* option) {
    std::vector<SpecEntry> out;
    if (!spec || !*spec) return out;
    for (const std::string& raw : split_list(spec)) {
        const std::string item = trim(raw);
        SD_CHECK(!item.empty(), "%s '%s': empty entry", option, spec);
        const size_t eq = item.find('=');
        SpecEntry e{"*", item};
        if (eq != std::string::npos && std::string(option) != "max_vram") {
            e.component = lower(trim(item.substr(0, eq)));
            e.value = trim(item.substr(eq + 1));
            if (e.component == "all") e.component = "*";
            SD_CHECK(e.component == "*" || known_component(e.component),
                     "%s '%s': unknown component '%s' (known: *, all, diffusion, te, clip_vision, "
                     "vae, controlnet, photomaker, upscaler, detector)",
                     option, spec, e.component.c_str());
        }
        SD_CHECK(!e.value.empty(), "%s '%s': '%s' has no value", option, spec, item.c_str());
        out.push_back(e);
    }
    return out;
}

Placement read_placement(const sd_ctx_params_t& p) {
    Placement out;
    for (const SpecEntry& e : parse_spec(p.backend, "backend")) {
        const std::string device = device_of(e.value, "backend");
        const bool all = e.component == "*";
        if (all || e.component == "diffusion") out.devices.diffusion = device;
        if (all || e.component == "vae") out.devices.vae = device;
        if (all || e.component == "controlnet") out.devices.controlnet = device;
        if (device.empty()) {
            if (is_text_encoder(e.component)) out.keep_text_encoder = true;
            if (e.component == "vae") out.keep_vae = true;
        } else if (!all && e.component != "diffusion" && e.component != "vae" &&
                   e.component != "controlnet") {
            SD_LOG_WARN(
                "backend: %s=%s: this version runs only the diffusion model, the VAE and a "
                "ControlNet on a device; the %s runs on the CPU",
                e.component.c_str(), device.c_str(), e.component.c_str());
        }
    }
    if (!out.devices.diffusion.empty() || !out.devices.vae.empty())
        SD_LOG_INFO("devices: diffusion model on %s, VAE on %s, text encoders on the CPU",
                    out.devices.diffusion.empty() ? "the CPU" : out.devices.diffusion.c_str(),
                    out.devices.vae.empty() ? "the CPU" : out.devices.vae.c_str());
    std::vector<std::string> on_disk;
    for (const SpecEntry& e : parse_spec(p.params_backend, "params_backend")) {
        if (is_disk(e.value, "params_backend")) {
            on_disk.push_back(e.component);
        } else {
            if (is_text_encoder(e.component)) out.keep_text_encoder = true;
            if (e.component == "vae") out.keep_vae = true;
        }
    }
    if (!on_disk.empty() || p.stream_layers) out.residency = Residency::Streamed;
    // Residency is one setting for all the networks of a model here.
    if (!on_disk.empty() && on_disk.front() != "*")
        SD_LOG_INFO("params_backend %s=disk: this build streams every network from disk",
                    on_disk.front().c_str());
    out.devices.weight_budget = read_max_vram(p.max_vram);
    // --auto-fit places the models once their sizes are known, unless a device (or the CPU)
    // was named for them.
    bool named = false;
    for (const SpecEntry& e : parse_spec(p.backend, "backend"))
        named = named || e.component == "*" || e.component == "diffusion";
    out.devices.auto_fit = p.auto_fit && !named;
    out.devices.vae_on_cpu = out.keep_vae;
    read_model_args(p.model_args, out);
    return out;
}

UpscalerPlacement read_upscaler_placement(const char* backend, const char* params_backend) {
    UpscalerPlacement out;
    for (const SpecEntry& e : parse_spec(backend, "backend")) {
        const std::string device = device_of(e.value, "backend");
        if (e.component == "*" || e.component == "upscaler") out.device = device;
    }
    for (const SpecEntry& e : parse_spec(params_backend, "params_backend")) {
        const bool disk = is_disk(e.value, "params_backend");
        if (disk && (e.component == "*" || e.component == "upscaler"))
            out.residency = Residency::Streamed;
    }
    return out;
}

}  // namespace sd::api

extern "C" {

const char* sd_compute_type_name(enum sd_compute_type_t type) {
    switch (type) {
        case SD_COMPUTE_TYPE_AUTO:
            return "auto";
        case SD_COMPUTE_TYPE_F32:
            return "f32";
        case SD_COMPUTE_TYPE_BF16:
            return "bf16";
        default:
            return nullptr;
    }
}

enum sd_compute_type_t str_to_sd_compute_type(const char* name) {
    for (int i = 0; i < SD_COMPUTE_TYPE_COUNT && name; ++i) {
        const auto type = static_cast<sd_compute_type_t>(i);
        if (std::string(name) == sd_compute_type_name(type)) return type;
    }
    return SD_COMPUTE_TYPE_COUNT;
}

void sd_ctx_ext_params_init(sd_ctx_ext_params_t* ext) {
    if (!ext) return;
    *ext = {};
    ext->tokenizer_dir = nullptr;
    ext->compute_type = SD_COMPUTE_TYPE_COUNT;
    ext->max_prompt_tokens = SD_DEFAULT_MAX_PROMPT_TOKENS;
}

bool sd_check_model_args(const char* model_args, char* message, size_t message_size) {
    try {
        sd::api::Placement unused;
        sd::api::read_model_args(model_args, unused);
        return true;
    } catch (const std::exception& e) {
        sd::api::hand_out_message(e.what(), message, message_size);
        return false;
    }
}

const char* sd_model_args_keys(void) {
    return sd::api::model_args_keys().c_str();
}

}  // extern "C"
