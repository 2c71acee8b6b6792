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

// A manifest of tests/families/manifests/ (real layouts the fixtures do not have).
inline std::string local_manifest(const std::string& name) {
    return std::string(SD_TESTS_SOURCE_DIR) + "/families/manifests/" + name + ".tsv";
}

// A sparse checkpoint of `manifest` (a fixture manifest's name, or a .tsv path) with the
// given write_sparse_checkpoint.py options.
inline std::string sparse(const std::string& manifest, const std::string& name,
                          const std::string& options = "") {
    const std::string tsv =
        manifest.ends_with(".tsv") ? manifest : fixtures_dir() + "/manifests/" + manifest + ".tsv";
    // Named per process: the tests of one suite run as parallel processes, and one's file
    // must not be rewritten while another reads it.
    std::string path =
        testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".safetensors";
    temp_paths().add(path);  // removed when the process exits
    run_or_fail("/usr/bin/python3 " + std::string(SD_TESTS_SOURCE_DIR) +
                "/tools/write_sparse_checkpoint.py " + tsv + " " + path + " " + options);
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
