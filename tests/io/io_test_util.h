// Helpers for file-format tests: temporary files with given bytes or tensors, and the error
// text of a call expected to fail.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "base/error.h"
#include "io/tensor_writer.h"
#include "test_util.h"

namespace sd::test {

inline std::string write_temp(const std::string& name, const std::string& bytes) {
    std::string path = temp_path(name);
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

// f32 tensors by name written as a temp file named after the process and NAME (a test suite's
// tests run as parallel processes); returns the path.
inline std::string write_f32_safetensors(const std::map<std::string, Tensor>& params,
                                         const std::string& name) {
    std::vector<OutputTensor> out;
    for (const auto& [n, t] : params) out.push_back({n, DType::F32, t.shape(), [t] { return t; }});
    const std::string path = temp_path(name + ".safetensors");
    write_safetensors(path, out);
    return path;
}

// Runs fn, expecting an sd::Error; returns its message ("" and a test failure if none).
inline std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "threw a non-sd::Error: " << e.what();
        return e.what();
    }
    ADD_FAILURE() << "expected an error";
    return "";
}

inline std::string le64(uint64_t v) {
    return std::string(reinterpret_cast<const char*>(&v), 8);
}

}  // namespace sd::test

#define EXPECT_ERROR_CONTAINS(stmt, text)                                         \
    do {                                                                          \
        std::string sd_msg = ::sd::test::error_of([&] { stmt; });                 \
        EXPECT_NE(sd_msg.find(text), std::string::npos) << "message: " << sd_msg; \
    } while (0)
