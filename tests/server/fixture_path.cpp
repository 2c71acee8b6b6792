// Prints the path of the sd15 fixture checkpoint (generating it into the build's fixture
// cache when missing), for the client tests in tests/server/node.
#include <cstdio>
#include <exception>

#include "fixture_files.h"

int main() {
    try {
        std::printf("%s\n", sd::test::generated_checkpoint("sd15", "f16", 1).c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
