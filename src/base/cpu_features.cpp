#include "base/cpu_features.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SD_HAVE_CPUID 1
#endif

namespace sd {
namespace {

#ifdef SD_HAVE_CPUID
uint64_t read_xcr0() {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

std::string read_line(const std::string& path) {
    std::ifstream f(path);
    std::string line;
    if (f) std::getline(f, line);
    return line;
}

// "48K" / "1024K" / "32M" as written in sysfs cache/index*/size.
size_t parse_cache_size(const std::string& s) {
    if (s.empty()) return 0;
    size_t value = std::strtoull(s.c_str(), nullptr, 10);
    char unit = s.back();
    if (unit == 'K') value *= 1024;
    if (unit == 'M') value *= 1024 * 1024;
    return value;
}

void read_topology(CpuFeatures& f) {
    f.logical_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::set<std::pair<std::string, std::string>> cores;
    for (int cpu = 0; cpu < f.logical_cpus; ++cpu) {
        std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        std::string package = read_line(base + "physical_package_id");
        std::string core = read_line(base + "core_id");
        if (core.empty()) continue;
        cores.insert({package, core});
    }
    f.physical_cores = cores.empty() ? f.logical_cpus : static_cast<int>(cores.size());

    for (int index = 0; index < 8; ++index) {
        std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        std::string level = read_line(base + "level");
        if (level.empty()) break;
        std::string type = read_line(base + "type");
        size_t size = parse_cache_size(read_line(base + "size"));
        if (size == 0) continue;
        if (level == "1" && type == "Data") f.l1d_bytes = size;
        if (level == "2") f.l2_bytes = size;
        if (level == "3") f.l3_bytes = size;
    }
}

CpuFeatures detect() {
    CpuFeatures f;
#ifdef SD_HAVE_CPUID
    uint32_t eax, ebx, ecx, edx;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
        f.sse42 = ecx & (1u << 20);
        f.fma = ecx & (1u << 12);
        f.f16c = ecx & (1u << 29);
        bool osxsave = ecx & (1u << 27);
        bool avx_hw = ecx & (1u << 28);
        uint64_t xcr0 = osxsave ? read_xcr0() : 0;
        bool os_ymm = (xcr0 & 0x6) == 0x6;
        bool os_zmm = (xcr0 & 0xe6) == 0xe6;
        f.avx = avx_hw && os_ymm;
        f.fma = f.fma && f.avx;
        f.f16c = f.f16c && f.avx;
        if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
            f.avx2 = f.avx && (ebx & (1u << 5));
            f.avx512f = os_zmm && (ebx & (1u << 16));
            f.avx512dq = f.avx512f && (ebx & (1u << 17));
            f.avx512bw = f.avx512f && (ebx & (1u << 30));
            f.avx512vl = f.avx512f && (ebx & (1u << 31));
            f.avx512vnni = f.avx512f && (ecx & (1u << 11));
        }
        if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
            f.avx512bf16 = f.avx512f && (eax & (1u << 5));
        }
    }
#endif
    read_topology(f);
    return f;
}

Isa isa_from_env(Isa fallback) {
    const char* env = std::getenv("SD_ISA");
    if (!env) return fallback;
    if (std::strcmp(env, "generic") == 0) return Isa::Generic;
    if (std::strcmp(env, "avx2") == 0) return Isa::Avx2;
    if (std::strcmp(env, "avx512") == 0) return Isa::Avx512;
    return fallback;
}

Isa clamp_isa(Isa isa) {
    return static_cast<int>(isa) > static_cast<int>(best_supported_isa()) ? best_supported_isa()
                                                                          : isa;
}

std::atomic<int>& active_isa_slot() {
    static std::atomic<int> slot{static_cast<int>(clamp_isa(isa_from_env(best_supported_isa())))};
    return slot;
}

}  // namespace

std::string CpuFeatures::describe() const {
    std::string s;
    auto add = [&s](bool have, const char* name) {
        if (!have) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
    add(sse42, "SSE4.2");
    add(avx, "AVX");
    add(avx2, "AVX2");
    add(fma, "FMA");
    add(f16c, "F16C");
    add(avx512f, "AVX512F");
    add(avx512bw, "AVX512BW");
    add(avx512vl, "AVX512VL");
    add(avx512dq, "AVX512DQ");
    add(avx512vnni, "AVX512_VNNI");
    add(avx512bf16, "AVX512_BF16");
    return s.empty() ? "none" : s;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

Isa best_supported_isa() {
#ifdef SD_X86_KERNELS
    const CpuFeatures& f = cpu_features();
    if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.fma && f.f16c) return Isa::Avx512;
    if (f.avx2 && f.fma && f.f16c) return Isa::Avx2;
#endif
    return Isa::Generic;
}

Isa active_isa() {
    return static_cast<Isa>(active_isa_slot().load(std::memory_order_relaxed));
}

void set_isa(Isa isa) {
    active_isa_slot() = static_cast<int>(clamp_isa(isa));
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Generic:
            return "generic";
        case Isa::Avx2:
            return "avx2";
        case Isa::Avx512:
            return "avx512";
    }
    return "?";
}

}  // namespace sd
