// A fixture for the vocabulary finders' tests: SD_TOKENIZER_DIR unset for the test (restored
// afterwards) and an empty temporary folder root_ named after the test suite.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "io/io_test_util.h"

namespace sd::test {

class TokenizerSearchFixture : public testing::Test {
  protected:
    void SetUp() override {
        if (const char* env = std::getenv("SD_TOKENIZER_DIR")) saved_env_ = env;
        unsetenv("SD_TOKENIZER_DIR");
        root_ = temp_path(testing::UnitTest::GetInstance()->current_test_suite()->name());
        std::filesystem::remove_all(root_);
        std::filesystem::create_directories(root_);
    }
    void TearDown() override {
        if (saved_env_) {
            setenv("SD_TOKENIZER_DIR", saved_env_->c_str(), 1);
        } else {
            unsetenv("SD_TOKENIZER_DIR");
        }
        std::filesystem::remove_all(root_);
    }
    std::filesystem::path root_;

  private:
    std::optional<std::string> saved_env_;
};

}  // namespace sd::test
