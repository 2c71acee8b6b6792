// Test helper: opens a model file (any format) and prints "name dtype shape" for every
// tensor, as a user listing a checkpoint would. Used to measure the RSS of opening a file.
#include <cstdio>

#include "io/model_files.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: list_model_tensors MODEL\n");
        return 2;
    }
    try {
        sd::ModelFiles files;
        files.add(argv[1], sd::ModelRole::Checkpoint);
        for (const std::string& name : files.names()) {
            const sd::TensorRecord& r = files.get(name);
            std::printf("%s %s %s\n", name.c_str(), sd::dtype_name(r.dtype),
                        r.shape.to_string().c_str());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "list_model_tensors: %s\n", e.what());
        return 1;
    }
    return 0;
}
