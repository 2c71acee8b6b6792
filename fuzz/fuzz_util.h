// Shared by the fuzz targets: the input as a file for the readers that take a path, a
// walk over what a reader returned that reads every byte a small tensor views, and the
// rule that sd::Error is the expected outcome while any other exception is a finding.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <typeinfo>

#include "base/error.h"
#include "base/thread_pool.h"
#include "io/tensor_file.h"
#include "ops/convert.h"

namespace sd::fuzz {

// A folder of this process's own under $SD_FUZZ_TMP, else /dev/shm (or /tmp); removed at
// a normal exit (scripts/fuzz.sh removes $SD_FUZZ_TMP after a crash).
inline const std::string& private_dir() {
    // Never destroyed, so that the exit handler can still use it.
    static const std::string* dir = [] {
        struct stat st {};
        const char* env = std::getenv("SD_FUZZ_TMP");
        std::string base = env && *env ? env : ::stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
        auto* d = new std::string(base + "/sd_fuzz_" + std::to_string(::getpid()));
        if (::mkdir(d->c_str(), 0700) != 0 && errno != EEXIST) {
            std::perror(d->c_str());
            std::abort();
        }
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(private_dir(), ec);
        });
        return d;
    }();
    return *dir;
}

// Writes `data` to private_dir()/name, replacing what was there; returns the path.
inline std::string write_file(const std::string& name, const uint8_t* data, size_t size) {
    std::string path = private_dir() + "/" + name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || (size > 0 && std::fwrite(data, 1, size, f) != size)) {
        std::perror(path.c_str());
        std::abort();
    }
    std::fclose(f);
    return path;
}

// Where results go so that reading them is not optimised away.
inline volatile uint64_t sink = 0;

// Tensors up to this many bytes in the file are loaded and read through.
constexpr size_t kMaxLoadBytes = size_t{1} << 20;

inline uint64_t read_through(const Tensor& t) {
    Tensor packed = t.contiguous();
    const auto* p = static_cast<const uint8_t*>(packed.data_ptr());
    uint64_t sum = 0;
    for (size_t i = 0; i < packed.nbytes(); ++i) sum += p[i];
    return sum;
}

// Loads every small tensor, reads all its bytes, and converts it to f32 (which dequantizes
// block types); also formats every metadata value.
inline uint64_t touch(const TensorFile& file) {
    // Ops on one thread: handing tiny tensors to workers costs more than the parse.
    static const bool single_thread = (set_num_threads(1), true);
    (void)single_thread;
    uint64_t sum = 0;
    for (const auto& [key, value] : file.metadata) sum += key.size() + value.to_string().size();
    for (const TensorRecord& r : file.tensors) {
        sum += r.name.size() + static_cast<uint64_t>(r.shape.numel());
        if (r.file_bytes() > kMaxLoadBytes) continue;
        Tensor t = r.load();
        sum += read_through(t);
        try {
            sum += read_through(convert(t, DType::F32));
        } catch (const Error&) {
        }
    }
    return sum;
}

// Runs `fn` on one input: sd::Error is bad input rejected as it should be (printed when
// SD_FUZZ_VERBOSE is set); any other exception is reported and aborts, so that libFuzzer
// records the input as a crash.
template <class Fn>
int run_one(Fn&& fn) {
    static const bool verbose = std::getenv("SD_FUZZ_VERBOSE") != nullptr;
    try {
        fn();
        if (verbose) std::fprintf(stderr, "accepted\n");
    } catch (const Error& e) {
        if (verbose) std::fprintf(stderr, "sd::Error: %s\n", e.what());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FUZZ FINDING: %s escaped: %s\n", typeid(e).name(), e.what());
        std::abort();
    }
    return 0;
}

}  // namespace sd::fuzz
