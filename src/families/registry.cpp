#include "families/registry.h"

#include "base/error.h"
#include "base/log.h"
#include "pipeline/device_placement.h"

namespace sd {

// Each family's single definition (sd1.cpp, sd2.cpp, sdxl.cpp, not_built.cpp ...).
extern const Family kSdxlRefinerFamily;
extern const Family kSdxlFamily;
extern const Family kSd2Family;
extern const Family kSd1Family;
extern const Family kSd3Family;
extern const Family kFluxFamily;
extern const Family kChromaRadianceFamily;
extern const Family kFlux2Family;
extern const Family kChromaFamily;
extern const Family kWanFamily;
extern const Family kWan22Ti2vFamily;
extern const Family kQwenImageFamily;
extern const Family kZImageFamily;
extern const Family kLumina2Family;

std::span<const Family* const> families() {
    // UNet families by their context width and label_emb, then the DiT layouts by their
    // block names (Chroma-Radiance, then Chroma, before FLUX: each has the next one's blocks
    // and more; FLUX.2 before them: it has FLUX's blocks and shared modulations; Z-Image before
    // Lumina 2: both are NextDiTs).
    static const Family* const table[] = {
        &kSd1Family,    &kSd2Family,    &kSdxlRefinerFamily,    &kSdxlFamily,
        &kSd3Family,    &kFlux2Family,  &kChromaRadianceFamily, &kChromaFamily,
        &kFluxFamily,   &kWanFamily,    &kWan22Ti2vFamily,      &kQwenImageFamily,
        &kZImageFamily, &kLumina2Family};
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

const char* role_words(const RoleUse& use) {
    return use.what ? use.what : model_role_name(use.role);
}

const RoleUse* find_role_use(const Family& family, ModelRole role) {
    for (const RoleUse& use : family.roles)
        if (use.role == role) return &use;
    return nullptr;
}

void fail_missing_role(const ModelFiles& files, const Family& family, ModelRole role) {
    const RoleUse* use = find_role_use(family, role);
    fail("%s: %s needs its %s (%s%s FILE)", files.describe_sources().c_str(), family.name,
         use ? role_words(*use) : model_role_name(role), use && use->hint ? use->hint : "",
         component_role(role).option);
}

bool some_family_takes(ModelRole role) {
    for (const Family* f : families())
        if (find_role_use(*f, role)) return true;
    return false;
}

namespace {

bool runnable_family_takes(ModelRole role) {
    for (const Family* f : families())
        if (f->assemble && find_role_use(*f, role)) return true;
    return false;
}

[[noreturn]] void fail_unknown_layout(const ModelFiles& files) {
    std::string tried, parts;
    for (const Family* f : families()) tried += std::string(tried.empty() ? "" : ", ") + f->name;
    for (const ComponentRole& r : component_roles()) {
        if (r.role != ModelRole::Checkpoint && runnable_family_takes(r.role))
            parts += std::string(parts.empty() ? "" : ", ") + r.option;
    }
    // A part given that no family this build runs takes points at the family it is for.
    std::string unbuilt;
    for (const RoleFile& f : files.role_files()) {
        if (runnable_family_takes(f.role)) continue;
        unbuilt += std::string("; ") + component_role(f.role).option + " (" +
                   model_role_name(f.role) + ") is taken by no model family this build runs";
    }
    fail(
        "%s: no known model layout (tried %s); is it a model file, and are all its parts given "
        "(%s)?%s",
        files.describe_sources().c_str(), tried.c_str(), parts.c_str(), unbuilt.c_str());
}

// The files given for component roles against the roles the family takes and needs.
void check_roles(const ModelFiles& files, const Family& family, const std::string& variant) {
    for (const RoleFile& f : files.role_files()) {
        if (find_role_use(family, f.role)) continue;
        fail("%s '%s' is given, but the %s model takes no %s", component_role(f.role).option,
             f.path.c_str(), variant.c_str(), model_role_name(f.role));
    }
    for (const RoleUse& use : family.roles)
        if (use.required && !files.has_role(use.role)) fail_missing_role(files, family, use.role);
}

}  // namespace

LoadedModel load_model(const ModelFiles& files, const LoadOptions& options) {
    DetectedFamily d = detect_family(files);
    if (!d.family) fail_unknown_layout(files);
    if (!d.runnable()) {
        fail("%s holds a %s model, which this program cannot run yet",
             files.describe_sources().c_str(), d.variant.c_str());
    }
    check_roles(files, *d.family, d.variant);
    SD_LOG_INFO("model family: %s", d.variant.c_str());
    LoadedModel m;
    m.family = d.family;
    m.components = d.family->assemble(files, options);
    m.components.family_name = d.variant;
    m.components.latent = d.family->latent;
    m.components.footprint = d.family->footprint;
    m.components.memory = options.memory;
    place_on_devices(m.components, options.devices);
    return m;
}

}  // namespace sd
