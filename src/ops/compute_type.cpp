#include "ops/compute_type.h"

#include <atomic>

#include "base/cpu_features.h"
#include "base/log.h"

namespace sd {
namespace {

std::atomic<int>& compute_type_slot() {
    static std::atomic<int> slot{static_cast<int>(supported_compute_type(ComputeType::Auto))};
    return slot;
}

// -1: no override on this thread.
thread_local int thread_override = -1;

}  // namespace

bool bf16_compute_supported() {
#ifdef SD_X86_KERNELS
    return cpu_features().avx512bf16 && best_supported_isa() == Isa::Avx512;
#else
    return false;
#endif
}

ComputeType supported_compute_type(ComputeType type) {
    if (type == ComputeType::Auto) return bf16_compute_supported() ? type : ComputeType::F32;
    if (type == ComputeType::BF16 && !bf16_compute_supported()) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true)) {
            SD_LOG_WARN("compute type bf16 needs AVX512-BF16 (%s); computing in f32",
                        cpu_features().avx512bf16 ? "this build has no x86 kernels"
                                                  : "this CPU does not have it");
        }
        type = ComputeType::F32;
    }
    return type;
}

ComputeType set_compute_type(ComputeType type) {
    type = supported_compute_type(type);
    compute_type_slot() = static_cast<int>(type);
    return type;
}

ComputeType compute_type() {
    if (thread_override >= 0) return static_cast<ComputeType>(thread_override);
    return static_cast<ComputeType>(compute_type_slot().load(std::memory_order_relaxed));
}

bool bf16_products(DType weight) {
    const ComputeType type = compute_type();
    return type == ComputeType::BF16 || (type == ComputeType::Auto && weight == DType::BF16);
}

ScopedComputeType::ScopedComputeType(ComputeType type) : previous_(thread_override) {
    thread_override = static_cast<int>(supported_compute_type(type));
}

ScopedComputeType::~ScopedComputeType() {
    thread_override = previous_;
}

const char* compute_type_name(ComputeType type) {
    switch (type) {
        case ComputeType::BF16:
            return "bf16";
        case ComputeType::Auto:
            return "auto";
        default:
            return "f32";
    }
}

bool parse_compute_type(const std::string& name, ComputeType* type) {
    if (name == "f32") {
        *type = ComputeType::F32;
    } else if (name == "bf16") {
        *type = ComputeType::BF16;
    } else if (name == "auto") {
        *type = ComputeType::Auto;
    } else {
        return false;
    }
    return true;
}

}  // namespace sd
