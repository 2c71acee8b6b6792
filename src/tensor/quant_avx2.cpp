#include "tensor/quant_blocks.h"

namespace sd::quant {

DequantizeFn avx2_dequantizer(DType type) {
    return nullptr;
}

}  // namespace sd::quant
