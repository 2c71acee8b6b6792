#include "families/registry.h"

#include "base/error.h"
#include "base/log.h"

namespace sd {

// Each family's single definition (sd1.cpp, sd2.cpp, sdxl.cpp, not_built.cpp ...).
extern const Family kSdxlFamily;
extern const Family kSd2Family;
extern const Family kSd1Family;
extern const Family kSd3Family;
extern const Family kFluxFamily;
extern const Family kChromaFamily;
extern const Family kWanFamily;
extern const Family kQwenImageFamily;
extern const Family kLumina2Family;

std::span<const Family* const> families() {
    // UNet families by their context width and label_emb, then the DiT layouts by their
    // block names (Chroma before FLUX: it has FLUX's blocks and more).
    static const Family* const table[] = {&kSd1Family, &kSd2Family,       &kSdxlFamily,
                                          &kSd3Family, &kChromaFamily,    &kFluxFamily,
                                          &kWanFamily, &kQwenImageFamily, &kLumina2Family};
    return table;
}

DetectedFamily detect_family(const ModelFiles& files) {
    for (const Family* f : families()) {
        std::string variant = f->detect(files);
        if (!variant.empty()) return {f, variant};
    }
    return {};
}

std::vector<std::string> convert_keeps() {
    std::vector<std::string> keeps;
    for (const Family* f : families())
        keeps.insert(keeps.end(), f->convert_keeps.begin(), f->convert_keeps.end());
    return keeps;
}

LoadedModel load_model(const ModelFiles& files, const LoadOptions& options) {
    DetectedFamily d = detect_family(files);
    if (!d.family) {
        std::string tried;
        for (const Family* f : families())
            tried += std::string(tried.empty() ? "" : ", ") + f->name;
        fail(
            "%s: no known model layout (tried %s); is it a model file, and are all its parts "
            "given (--diffusion-model, --vae, --clip_l, --clip_g ...)?",
            files.describe_sources().c_str(), tried.c_str());
    }
    if (!d.runnable()) {
        fail("%s holds a %s model, which this program cannot run yet",
             files.describe_sources().c_str(), d.variant.c_str());
    }
    SD_LOG_INFO("model family: %s", d.variant.c_str());
    LoadedModel m;
    m.family = d.family;
    m.components = d.family->assemble(files, options);
    m.components.family_name = d.variant;
    m.components.latent = d.family->latent;
    m.components.footprint = d.family->footprint;
    m.components.memory = options.memory;
    return m;
}

}  // namespace sd
