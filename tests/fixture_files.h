// Generated fixture checkpoints for tests: ../shared/fixtures/mkckpt.py run once per
// (manifest, dtype, seed) into the fixture cache (fixture_cache.h), shared by every test
// process.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "fixture_cache.h"
#include "test_util.h"

namespace sd::test {

// Runs a shell command, failing with its text when it does not succeed.
inline void run_or_fail(const std::string& command) {
    int rc = std::system(command.c_str());
    if (rc != 0) fail("command failed (%d): %s", rc, command.c_str());
}

// Bytes mkckpt.py writes for `manifest` stored as `dtype` (empty: the manifest's own), header
// aside.
inline uint64_t manifest_bytes(const std::string& manifest, const std::string& dtype) {
    std::ifstream in(fixtures_dir() + "/manifests/" + manifest + ".tsv");
    uint64_t total = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> cols;
        for (size_t at = 0; at <= line.size();) {
            size_t tab = std::min(line.find('\t', at), line.size());
            cols.push_back(line.substr(at, tab - at));
            at = tab + 1;
        }
        if (cols.size() < 2) continue;
        std::string type = cols[1].substr(0, cols[1].find(':'));
        const bool fill = cols[1].find(":const=") != std::string::npos;
        if (!dtype.empty() && !fill && (type == "f32" || type == "f16" || type == "bf16"))
            type = dtype;
        uint64_t n = 1;
        for (size_t i = 2; i < cols.size(); ++i) n *= std::strtoull(cols[i].c_str(), nullptr, 10);
        total += n * (type == "i64" ? 8 : type == "f32" || type == "i32" ? 4 : 2);
    }
    return total;
}

// Runs `mkckpt.py MANIFEST.tsv OUT [--dtype D] --seed S` into `path` unless it is there.
inline void generate_once(const std::string& path, const std::string& manifest,
                          const std::string& dtype, int seed) {
    make_once(
        path,
        [&](const std::string& tmp) {
            std::string fx = fixtures_dir();
            std::string dtype_arg = dtype.empty() ? "" : " --dtype " + dtype;
            return "/usr/bin/python3 " + fx + "/mkckpt.py " + fx + "/manifests/" + manifest +
                   ".tsv " + tmp + dtype_arg + " --seed " + std::to_string(seed) +
                   " || { echo 'mkckpt.py failed (its message is above; without python3-numpy, run "
                   "scripts/install-deps.sh)' >&2; exit 1; }";
        },
        manifest_bytes(manifest, dtype));
}

// Path of `manifest` (e.g. "sd15") generated as `dtype` with `seed`, e.g.
// fixture_cache/sd15_f16_seed1.safetensors (the name the fixtures README uses).
// When `cache` is false the file goes to the test's temp folder; the caller removes it.
inline std::string generated_checkpoint(const std::string& manifest, const std::string& dtype,
                                        int seed, bool cache = true) {
    std::string name = manifest + "_" + dtype + "_seed" + std::to_string(seed) + ".safetensors";
    std::string dir = cache ? fixture_cache_dir() : testing::TempDir();
    std::string path = dir + "/" + name;
    generate_once(path, manifest, dtype, seed);
    return path;
}

// A generated file as the fixtures README's table names it (its first column, e.g.
// "cn_sd15_f16_seed4.safetensors" or "loras/lora_sd15_kohya_seed7.safetensors"), made
// with the command of its row into the same relative path under the fixture cache.
struct ReadmeFixture {
    std::string name;  // relative path
    std::string manifest;
    std::string dtype;  // empty: mkckpt.py's default
    int seed = 0;
};

inline std::vector<ReadmeFixture> readme_fixtures() {
    std::ifstream in(fixtures_dir() + "/README.md");
    const std::regex row(
        R"(^\| `([^`]+)` \| `mkckpt\.py manifests/([A-Za-z0-9_]+)\.tsv OUT( --dtype ([a-z0-9]+))? --seed ([0-9]+)` \|)");
    std::vector<ReadmeFixture> out;
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, row))
            out.push_back({m[1], m[2], m[4], std::stoi(m[5].str())});
    }
    return out;
}

// A file the README's table does not list, named as its rows are:
// "DIR/NAME_DTYPE_seedN.safetensors" with manifests/NAME.tsv, or the one manifest NAME_*.tsv
// ("qwen3/qwen3_4b_bf16_seed31" is made from qwen3_4b_l36.tsv, the depth suffix left out of the
// name). false: not such a name.
inline bool fixture_by_name(const std::string& name, ReadmeFixture& out) {
    static const std::regex pattern(
        R"(^(?:[A-Za-z0-9_]+/)?([A-Za-z0-9_]+?)_(f16|f32|bf16)_seed([0-9]+)\.safetensors$)");
    std::smatch m;
    if (!std::regex_match(name, m, pattern)) return false;
    const std::string stem = m[1], dir = fixtures_dir() + "/manifests/";
    std::string manifest;
    if (file_exists(dir + stem + ".tsv")) {
        manifest = stem;
    } else if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d)) {
            const std::string file = e->d_name;
            if (file.rfind(stem + "_", 0) == 0 && file.size() > 4 &&
                file.compare(file.size() - 4, 4, ".tsv") == 0) {
                if (!manifest.empty())
                    fail("%s: several manifests %s_*.tsv", name.c_str(), stem.c_str());
                manifest = file.substr(0, file.size() - 4);
            }
        }
        ::closedir(d);
    }
    if (manifest.empty()) return false;
    out = {name, manifest, m[2], std::stoi(m[3].str())};
    return true;
}

inline std::string make_fixture(const ReadmeFixture& f) {
    std::string path = fixture_cache_dir() + "/" + f.name;
    size_t slash = path.rfind('/');
    ::mkdir(path.substr(0, slash).c_str(), 0755);
    generate_once(path, f.manifest, f.dtype, f.seed);
    return path;
}

inline std::string fixture_file(const std::string& name) {
    for (const ReadmeFixture& f : readme_fixtures()) {
        if (f.name == name) return make_fixture(f);
    }
    ReadmeFixture named;
    if (fixture_by_name(name, named)) return make_fixture(named);
    fail("%s is not a generated file of the fixtures README", name.c_str());
}

// Generates every README file at `relative` or below it (a folder such as "loras"), or the
// file `relative` names as the README's rows do.
inline void generate_fixtures_under(const std::string& relative) {
    bool listed = false;
    for (const ReadmeFixture& f : readme_fixtures()) {
        if (f.name == relative || f.name.rfind(relative + "/", 0) == 0) {
            fixture_file(f.name);
            listed = true;
        }
    }
    ReadmeFixture named;
    if (!listed && fixture_by_name(relative, named)) make_fixture(named);
}

// Writes the fixture manifest `source` (a .tsv path) to `out` with the UNet's (or a
// ControlNet's) widths divided by `divisor`: every width that is a multiple of 320, the text
// encoder's and VAE's tensors as they are (dropped with unet_only). Returns the bytes mkckpt.py
// writes for it in f16.
inline uint64_t write_scaled_unet_manifest(const std::string& source, const std::string& out,
                                           int divisor, bool unet_only) {
    std::ifstream in(source);
    if (!in) fail("cannot read the manifest %s", source.c_str());
    std::ofstream m(out);
    uint64_t bytes = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        const bool unet =
            line.rfind("model.diffusion_model.", 0) == 0 || line.rfind("control_model.", 0) == 0;
        if (unet_only && !unet) continue;
        std::istringstream fields(line);
        std::string tensor, dtype, dim;
        fields >> tensor >> dtype;
        m << tensor << '\t' << dtype;
        uint64_t numel = 1;
        while (fields >> dim) {
            const long v = std::stol(dim);
            const long scaled = unet && v % 320 == 0 ? v / divisor : v;
            m << '\t' << scaled;
            numel *= static_cast<uint64_t>(scaled);
        }
        m << '\n';
        bytes += numel * 2;
    }
    return bytes;
}

// A UNet family's fixture manifest (sd15, sdxl, controlnet_sd15) scaled as above, written by
// mkckpt.py in f16 into the fixture cache once (hundreds of MB each).
inline std::string scaled_unet_checkpoint(const std::string& manifest, int divisor,
                                          bool unet_only) {
    const std::string name =
        manifest + "_unet_div" + std::to_string(divisor) + (unet_only ? "_only" : "");
    const std::string tsv = temp_path(name + ".tsv");
    const std::string out = fixture_cache_dir() + "/" + name + "_f16_seed5.safetensors";
    const uint64_t bytes = write_scaled_unet_manifest(
        fixtures_dir() + "/manifests/" + manifest + ".tsv", tsv, divisor, unet_only);
    make_once(
        out,
        [&](const std::string& tmp) {
            return "/usr/bin/python3 " + fixtures_dir() + "/mkckpt.py " + tsv + " " + tmp +
                   " --dtype f16 --seed 5 > /dev/null";
        },
        bytes);
    return out;
}

// SD 1.5 with its UNet at a tenth of its widths (the 768-wide context kept: 8 heads); the
// text encoder and VAE are the fixture's, full size.
inline std::string tiny_sd15_checkpoint(bool unet_only = false) {
    return scaled_unet_checkpoint("sd15", 10, unet_only);
}

// SD 1.5's ControlNet at a tenth of its widths: it fits tiny_sd15_checkpoint's UNet.
inline std::string tiny_sd15_control_net() {
    return scaled_unet_checkpoint("controlnet_sd15", 10, false);
}

inline std::string tests_source_dir() {
    return SD_TESTS_SOURCE_DIR;
}

}  // namespace sd::test
