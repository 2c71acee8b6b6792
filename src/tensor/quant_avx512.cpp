#include "tensor/quant_blocks.h"

namespace sd::quant {

DequantizeFn avx512_dequantizer(DType type) {
    return nullptr;
}

}  // namespace sd::quant
