// Which model a set of files holds, from tensor names and shapes (as the reference tool
// detects it), and whether this program can run it yet.
#pragma once

#include <string>

#include "io/model_files.h"

namespace sd {

enum class ModelFamily {
    Unknown,
    SD1,
    SD1Inpaint,
    SD1Pix2Pix,
    SD2,
    SD2Inpaint,
    SDXL,
    SDXLInpaint,
    SDXLRefiner,
    SD3,
    Flux,
    FluxFill,
    Chroma,
    Wan,
    QwenImage,
    Lumina2,
};

struct ModelFamilyInfo {
    ModelFamily family = ModelFamily::Unknown;
    const char* name = "unknown";  // "SD 1.x", "SD 2.x inpaint", ...
    bool runnable = false;         // this build can generate with it
};

ModelFamilyInfo detect_model_family(const ModelFiles& files);
const char* model_family_name(ModelFamily family);
bool model_family_runnable(ModelFamily family);

}  // namespace sd
