// sd::imatrix::load (the C API's load_imatrix, -M convert's --imatrix) on the input as a
// file: llama.cpp / stable-diffusion.cpp's legacy .dat layout, or llama.cpp's GGUF imatrix for
// an input starting with "GGUF". The importance of the seeds' entries is read back (it must be
// finite and not negative) and the store emptied after each input.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "fuzz_util.h"
#include "io/imatrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = sd::fuzz::write_file("input.imatrix", data, size);
    sd::fuzz::run_one([&] {
        const size_t loaded = sd::imatrix::load(path);
        uint64_t sum = loaded + sd::imatrix::entry_count();
        for (const char* name : {"blk.0.attn_q.weight", "conv.weight", "x"}) {
            for (float v : sd::imatrix::importance(name)) {
                if (!std::isfinite(v) || v < 0) {
                    std::fprintf(stderr, "FUZZ FINDING: importance %g of '%s'\n",
                                 static_cast<double>(v), name);
                    std::abort();
                }
                sum += static_cast<uint64_t>(v > 1e6f ? 1e6f : v);
            }
        }
        sd::fuzz::sink = sum;
    });
    sd::imatrix::clear();
    return 0;
}
