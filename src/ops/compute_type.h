// The arithmetic of the large products: a process-wide default, and a per-thread override
// that a context holds while it generates (ScopedComputeType), so two contexts in one
// process compute as each was asked.
//
// F32 (the default) multiplies in f32. BF16 rounds both operands of the GEMM engine
// (ops/cpu/gemm.h: linear, matmul, conv2d) to bf16 while packing them and multiplies with
// AVX512-BF16 dot products, accumulating in f32. Attention, the products with at most
// cpu::kDotRows rows of A (one token or a time embedding) and every other op stay f32.
// BF16 needs a CPU with avx512_bf16 and a build with the x86 kernels; elsewhere a request
// for it falls back to F32 with one warning. gemm() also uses f32 while the kernel family
// is lowered below avx512 (set_isa / SD_ISA).
#pragma once

#include <string>

namespace sd {

enum class ComputeType { F32 = 0, BF16 = 1 };

// True when this CPU and this build can run BF16.
bool bf16_compute_supported();

// The type that can run: BF16 without support gives F32 (and a warning, the first time).
ComputeType supported_compute_type(ComputeType type);
// Sets the process default and returns the one in effect (supported_compute_type).
ComputeType set_compute_type(ComputeType type);
// The calling thread's override if one is live, else the process default.
ComputeType compute_type();

// Overrides the compute type on the calling thread while it lives (the large products are
// dispatched from the thread that calls the op).
class ScopedComputeType {
  public:
    explicit ScopedComputeType(ComputeType type);
    ~ScopedComputeType();
    ScopedComputeType(const ScopedComputeType&) = delete;
    ScopedComputeType& operator=(const ScopedComputeType&) = delete;

  private:
    int previous_;
};

const char* compute_type_name(ComputeType type);  // "f32", "bf16"
// Parses "f32" / "bf16"; false for anything else.
bool parse_compute_type(const std::string& name, ComputeType* type);

}  // namespace sd
