#include "io/model_family.h"

namespace sd {
namespace {

// The width of the cross-attention context (the text encoder's hidden size): 768 for
// SD 1.x, 1024 for SD 2.x, 2048 for SDXL, 1280 for the SDXL refiner.
int64_t unet_context_dim(const ModelFiles& files) {
    for (const char* block : {"input_blocks.1.1", "input_blocks.4.1", "input_blocks.7.1"}) {
        std::string name = std::string("model.diffusion_model.") + block +
                           ".transformer_blocks.0.attn2.to_k.weight";
        if (const TensorRecord* r = files.find(name); r && r->shape.size() == 2) return r->shape[1];
    }
    return 0;
}

int64_t unet_in_channels(const ModelFiles& files) {
    const TensorRecord* r = files.find("model.diffusion_model.input_blocks.0.0.weight");
    return r && r->shape.size() == 4 ? r->shape[1] : 0;
}

ModelFamily detect(const ModelFiles& files) {
    const std::string dm = "model.diffusion_model.";
    if (files.has_prefix(dm + "double_blocks.")) {
        if (files.has_prefix(dm + "distilled_guidance_layer.")) return ModelFamily::Chroma;
        const TensorRecord* img_in = files.find(dm + "img_in.weight");
        bool fill = img_in && img_in->shape.size() == 2 && img_in->shape[1] == 384;
        return fill ? ModelFamily::FluxFill : ModelFamily::Flux;
    }
    if (files.has_prefix(dm + "joint_blocks.")) return ModelFamily::SD3;
    if (files.has_prefix(dm + "blocks.0.cross_attn.") ||
        files.has_prefix(dm + "blocks.0.self_attn.")) {
        return ModelFamily::Wan;
    }
    if (files.has_prefix(dm + "transformer_blocks.0.img_mod.")) return ModelFamily::QwenImage;
    if (files.has_prefix(dm + "layers.0.attention.")) return ModelFamily::Lumina2;
    if (!files.has_prefix(dm + "input_blocks.")) return ModelFamily::Unknown;

    const int64_t context = unet_context_dim(files);
    const int64_t in_channels = unet_in_channels(files);
    if (files.has_prefix(dm + "label_emb.")) {
        if (context == 1280) return ModelFamily::SDXLRefiner;
        return in_channels == 9 ? ModelFamily::SDXLInpaint : ModelFamily::SDXL;
    }
    if (context == 1024) return in_channels == 9 ? ModelFamily::SD2Inpaint : ModelFamily::SD2;
    if (context == 768) {
        if (in_channels == 9) return ModelFamily::SD1Inpaint;
        if (in_channels == 8) return ModelFamily::SD1Pix2Pix;
        return ModelFamily::SD1;
    }
    return ModelFamily::Unknown;
}

}  // namespace

const char* model_family_name(ModelFamily family) {
    switch (family) {
        case ModelFamily::Unknown:
            return "unknown";
        case ModelFamily::SD1:
            return "SD 1.x";
        case ModelFamily::SD1Inpaint:
            return "SD 1.x inpaint";
        case ModelFamily::SD1Pix2Pix:
            return "SD 1.x instruct-pix2pix";
        case ModelFamily::SD2:
            return "SD 2.x";
        case ModelFamily::SD2Inpaint:
            return "SD 2.x inpaint";
        case ModelFamily::SDXL:
            return "SDXL";
        case ModelFamily::SDXLInpaint:
            return "SDXL inpaint";
        case ModelFamily::SDXLRefiner:
            return "SDXL refiner";
        case ModelFamily::SD3:
            return "SD3";
        case ModelFamily::Flux:
            return "FLUX";
        case ModelFamily::FluxFill:
            return "FLUX fill";
        case ModelFamily::Chroma:
            return "Chroma";
        case ModelFamily::Wan:
            return "Wan";
        case ModelFamily::QwenImage:
            return "Qwen-Image";
        case ModelFamily::Lumina2:
            return "Lumina 2";
    }
    return "unknown";
}

bool model_family_runnable(ModelFamily family) {
    // Grows as model families are built.
    switch (family) {
        case ModelFamily::SD1:
        case ModelFamily::SD1Inpaint:
        case ModelFamily::SD2:
        case ModelFamily::SD2Inpaint: return true;
        default: return false;
    }
}

ModelFamilyInfo detect_model_family(const ModelFiles& files) {
    ModelFamilyInfo info;
    info.family = detect(files);
    info.name = model_family_name(info.family);
    info.runnable = model_family_runnable(info.family);
    return info;
}

}  // namespace sd
