// Running a model test's independent numpy forward (tests/models/*_reference.py): the script
// reads MODEL.safetensors and INPUTS.safetensors and writes its output as raw f32.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "io/io_test_util.h"

namespace sd::test {

// `script` (a file of tests/models) on `model` and `inputs` (written as f32 safetensors named
// `name`_inputs), its output read back as a tensor of `shape`.
inline Tensor numpy_reference(const std::string& script, const std::string& model,
                              const std::map<std::string, Tensor>& inputs, const Shape& shape,
                              const std::string& name) {
    const std::string in_path = write_f32_safetensors(inputs, name + "_inputs");
    const std::string out_path = test::temp_path(name + "_out.f32");
    const std::string cmd = "/usr/bin/python3 " + tests_source_dir() + "/models/" + script + " " +
                            model + " " + in_path + " " + out_path;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(out_path, std::ios::binary);
    std::vector<float> out(static_cast<size_t>(shape.numel()));
    f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
    EXPECT_TRUE(f.good()) << out_path;
    std::remove(out_path.c_str());
    return Tensor::from_vector(shape, out);
}

}  // namespace sd::test
