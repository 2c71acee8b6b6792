// The Winograd transforms of winograd_kernels.h compiled for AVX-512 (16 tiles a vector).
#include "ops/cpu/winograd_kernels.h"

namespace sd::cpu {

const WinogradKernels& winograd_kernels_avx512() {
    static constexpr WinogradKernels kTable = winograd_loops::table();
    return kTable;
}

}  // namespace sd::cpu
