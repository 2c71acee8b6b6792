// The arithmetic of the large products: a process-wide default, and a per-thread override
// that a context holds while it generates (ScopedComputeType), so two contexts in one
// process compute as each was asked.
//
// F32 multiplies in f32. BF16 rounds both operands of the GEMM engine (ops/cpu/gemm.h:
// linear, matmul, conv2d) to bf16 while packing them and multiplies with AVX512-BF16 dot
// products, accumulating in f32. Auto (the default) does so only for the products whose
// weight is stored in bf16 (a linear or conv2d of a bf16 checkpoint), as the reference
// program's CPU backend does (a bf16 weight is multiplied by activations rounded to bf16);
// every other product stays f32. Attention, the products with at most cpu::kDotRows rows
// of A (one token or a time embedding) and every other op stay f32 in every mode.
// BF16 and Auto need a CPU with avx512_bf16 and a build with the x86 kernels; elsewhere
// Auto is F32 silently and an explicit BF16 falls back to F32 with one warning. gemm() also
// uses f32 while the kernel family is lowered below avx512 (set_isa / SD_ISA).
#pragma once

#include <string>

#include "tensor/dtype.h"

namespace sd {

enum class ComputeType { F32 = 0, BF16 = 1, Auto = 2 };

// True when this CPU and this build can run BF16.
bool bf16_compute_supported();

// The type that can run: without support BF16 gives F32 (and a warning, the first time)
// and Auto gives F32 (silently).
ComputeType supported_compute_type(ComputeType type);
// Sets the process default and returns the one in effect (supported_compute_type).
ComputeType set_compute_type(ComputeType type);
// The calling thread's override if one is live, else the process default.
ComputeType compute_type();
// Whether a product whose weight is stored as `weight` runs in bf16 under compute_type().
bool bf16_products(DType weight);

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

const char* compute_type_name(ComputeType type);  // "f32", "bf16", "auto"
// Parses "f32" / "bf16" / "auto"; false for anything else.
bool parse_compute_type(const std::string& name, ComputeType* type);

}  // namespace sd
