#include "model_lists.h"

#include <algorithm>
#include <filesystem>

#include "stable-diffusion.h"

namespace fs = std::filesystem;

namespace server {
namespace {

constexpr size_t kMaxEntries = 1000;

bool has_extension(const fs::path& path, std::initializer_list<const char*> extensions) {
    const std::string ext = path.extension().string();
    for (const char* e : extensions)
        if (ext == e) return true;
    return false;
}

}  // namespace

std::vector<ModelFile> list_loras(const std::string& dir) {
    std::vector<ModelFile> out;
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(dir, ec)) return out;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator() && out.size() < kMaxEntries;
         it.increment(ec)) {
        const fs::path& path = it->path();
        if (it->is_directory(ec)) {
            if (it.depth() >= 1 || path.filename().string().rfind('.', 0) == 0)
                it.disable_recursion_pending();
            continue;
        }
        if (!it->is_regular_file(ec) ||
            !has_extension(path, {".safetensors", ".gguf", ".pt", ".ckpt"}))
            continue;
        out.push_back({path.stem().string(), fs::relative(path, dir, ec).generic_string()});
    }
    std::sort(out.begin(), out.end(),
              [](const ModelFile& a, const ModelFile& b) { return a.path < b.path; });
    return out;
}

std::vector<ModelFile> list_upscaler_models(const std::string& dir) {
    std::vector<ModelFile> out;
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(dir, ec)) return out;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (out.size() >= kMaxEntries) break;
        if (!entry.is_regular_file(ec) ||
            !has_extension(entry.path(), {".pth", ".safetensors", ".gguf", ".bin"}))
            continue;
        out.push_back({entry.path().stem().string(), fs::absolute(entry.path(), ec).string()});
    }
    std::sort(out.begin(), out.end(),
              [](const ModelFile& a, const ModelFile& b) { return a.name < b.name; });
    return out;
}

std::vector<std::string> builtin_upscalers() {
    std::vector<std::string> out = {"None", "Lanczos", "Nearest"};
    for (const std::string& mode : latent_upscale_modes()) out.push_back(mode);
    return out;
}

std::vector<std::string> latent_upscale_modes() {
    std::vector<std::string> out;
    for (int i = 0; i < SD_HIRES_UPSCALER_COUNT; ++i) {
        const std::string name = sd_hires_upscaler_name(static_cast<sd_hires_upscaler_t>(i));
        if (name.rfind("Latent", 0) == 0) out.push_back(name);
    }
    return out;
}

}  // namespace server
