// What the CPU can do, read once with cpuid/xgetbv (an instruction set counts only when
// the OS also saves its registers), and which kernel family the ops should use.
#pragma once

#include <cstddef>
#include <string>

namespace sd {

struct CpuFeatures {
    bool sse42 = false;
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    int physical_cores = 1;
    int logical_cpus = 1;
    size_t l1d_bytes = 32 * 1024;   // per core
    size_t l2_bytes = 1024 * 1024;  // per core
    size_t l3_bytes = 0;            // shared, 0 when unknown

    std::string describe() const;  // "AVX2 FMA F16C AVX512F ..."
};

const CpuFeatures& cpu_features();

// Kernel families, from plain C++ up. Ops pick the highest one that is both compiled in
// and supported, unless lowered with set_isa() or the SD_ISA environment variable
// (generic|avx2|avx512), which tests use to run every path on one machine.
enum class Isa { Generic = 0, Avx2 = 1, Avx512 = 2 };

Isa best_supported_isa();  // of this CPU and this build
Isa active_isa();
// Sets the family to use; a family above best_supported_isa() is lowered to it.
void set_isa(Isa isa);
const char* isa_name(Isa isa);

}  // namespace sd
