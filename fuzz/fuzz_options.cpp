// The option strings a request carries to the library: `model_args` (sd_check_model_args:
// key=value,... with the reference's keys and ours) and the cache-dit step mask
// (parse_scm_mask). The input is split at its first NUL: MODEL_ARGS \0 SCM_MASK. Either
// accepts or says why; a bad string never crashes or loops.
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "sampling/cache_params.h"
#include "stable-diffusion-ext.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    const std::string model_args(input.substr(0, nul));
    const std::string mask(nul == std::string_view::npos ? std::string_view()
                                                         : input.substr(nul + 1));
    char message[256];
    const bool ok = sd_check_model_args(model_args.c_str(), message, sizeof(message));
    if (!ok && std::string_view(message).empty()) std::abort();  // a refusal says why
    sd::fuzz::run_one([&] {
        uint64_t sum = 0;
        for (int v : sd::parse_scm_mask(mask)) sum += static_cast<uint64_t>(v);
        sd::fuzz::sink = sum;
    });
    return 0;
}
