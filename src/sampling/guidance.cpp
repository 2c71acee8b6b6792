#include "sampling/guidance.h"

#include "base/error.h"
#include "ops/ops.h"

namespace sd {
namespace {

void check_same(const Tensor& a, const Tensor& b, const char* what) {
    SD_CHECK(a.shape() == b.shape(), "guidance: %s %s and %s differ in shape", what,
             a.describe().c_str(), b.describe().c_str());
}

}  // namespace

Tensor classifier_free_guidance(const Tensor& cond, const Tensor& uncond, float scale) {
    check_same(cond, uncond, "conditional and unconditional outputs");
    return uncond + (cond - uncond) * scale;
}

Tensor image_text_guidance(const Tensor& cond, const Tensor& img_cond, const Tensor& uncond,
                           float txt_scale, float img_scale) {
    check_same(cond, uncond, "conditional and unconditional outputs");
    check_same(img_cond, uncond, "image-conditional and unconditional outputs");
    return uncond + (img_cond - uncond) * img_scale + (cond - img_cond) * txt_scale;
}

Tensor skip_layer_guidance(const Tensor& guided, const Tensor& cond, const Tensor& skipped,
                           float scale) {
    check_same(cond, skipped, "conditional and skip-layer outputs");
    return guided + (cond - skipped) * scale;
}

}  // namespace sd
