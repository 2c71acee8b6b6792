// Helpers for the family tests: sparse full-size checkpoints (tests/tools/
// write_sparse_checkpoint.py over a fixture manifest; the data is a hole) and the load
// options the tests use.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <unistd.h>

#include "families/family.h"
#include "fixture_files.h"
#include "test_util.h"

namespace sd::test {

// A sparse checkpoint of `manifest` with the given write_sparse_checkpoint.py options.
inline std::string sparse(const std::string& manifest, const std::string& name,
                          const std::string& options = "") {
    // Named per process: the tests of one suite run as parallel processes, and one's file
    // must not be rewritten while another reads it.
    std::string path =
        testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".safetensors";
    run_or_fail("/usr/bin/python3 " + std::string(SD_TESTS_SOURCE_DIR) +
                "/tools/write_sparse_checkpoint.py " + fixtures_dir() + "/manifests/" + manifest +
                ".tsv " + path + " " + options);
    return path;
}

// The fixtures' tokenizers, no VAE encoder.
inline LoadOptions family_test_options() {
    LoadOptions o;
    o.tokenizer_dir = fixtures_dir() + "/tokenizers";
    o.with_vae_encoder = false;
    return o;
}

}  // namespace sd::test
