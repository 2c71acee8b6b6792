// Prints the path of the sd15 fixture checkpoint (generating it into the build's fixture
// cache when missing), for the client tests in tests/server/node; generates the kohya LoRA
// fixture beside it (loras/, for loras.cjs) as well.
#include <cstdio>
#include <exception>

#include "fixture_files.h"

int main() {
    try {
        const std::string checkpoint = sd::test::generated_checkpoint("sd15", "f16", 1);
        sd::test::fixture_file("loras/lora_sd15_kohya_seed7.safetensors");
        std::printf("%s\n", checkpoint.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
