// Runs sd-cli (SD_CLI_PATH, set by tools/cli/CMakeLists.txt for the tests that use it) as a
// user would: each argument shell-quoted, stdout and stderr together, the exit status.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "image/image_io.h"
#include "test_util.h"

namespace cli {

struct RunResult {
    int exit_code = -1;
    std::string output;  // stdout and stderr
};

inline std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Splits an argument string (a cases.tsv line, a README command) as a POSIX shell would for
// plain and "quoted" words.
inline std::vector<std::string> split_args(const std::string& text) {
    std::vector<std::string> out;
    std::string cur;
    bool in_word = false, quoted = false;
    for (char c : text) {
        if (quoted) {
            if (c == '"')
                quoted = false;
            else
                cur += c;
        } else if (c == '"') {
            quoted = in_word = true;
        } else if (c == ' ' || c == '\t') {
            if (in_word) out.push_back(cur);
            cur.clear();
            in_word = false;
        } else {
            cur += c;
            in_word = true;
        }
    }
    if (in_word) out.push_back(cur);
    return out;
}

// Runs in `cwd` when given; `shell_prefix` (shell commands ending in "exec ", e.g. a ulimit)
// goes before the program.
inline RunResult run_cli(const std::vector<std::string>& args, const std::string& cwd = "",
                         const std::string& shell_prefix = "") {
    std::string command;
    if (!cwd.empty()) {
        command += "cd ";
        command += quote(cwd);
        command += " && ";
    }
    command += shell_prefix;
    command += SD_CLI_PATH;
    for (const std::string& a : args) {
        command += ' ';
        command += quote(a);
    }
    command += " 2>&1";
    RunResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return result;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// The fixture FLUX.1-dev (2 + 2 blocks) and its VAE, CLIP-L and T5 as sd-cli options, with the
// fixtures' tokenizers (the files are generated on first use).
inline std::vector<std::string> flux_fixture_args() {
    return {"--diffusion-model",
            sd::test::fixture_file("flux/flux_dev_d2s2_bf16_seed10.safetensors"),
            "--vae",
            sd::test::fixture_file("flux/flux_ae_f32_seed11.safetensors"),
            "--clip_l",
            sd::test::fixture_file("flux/clip_l_f16_seed12.safetensors"),
            "--t5xxl",
            sd::test::fixture_file("flux/t5xxl_l2_f16_seed13.safetensors"),
            "--tokenizer-dir",
            sd::test::fixtures_dir() + "/tokenizers"};
}

// `source` (a generated fixture, as fixture_file names it) converted by sd-cli -M convert to
// q8_0, its tokenizer's vocabulary embedded from the fixtures' tokenizers, as fixture-cache/NAME,
// once (a cache file like the others: removed when the disk is short, made again when asked).
inline std::string converted_q8_0(const std::string& source, const std::string& name) {
    const std::string path = sd::test::fixture_cache_dir() + "/" + name;
    const std::string in = sd::test::fixture_file(source);
    sd::test::make_once(
        path,
        [&](const std::string& tmp) {
            return quote(SD_CLI_PATH) + " -M convert -m " + quote(in) + " -o " + quote(tmp) +
                   " --type q8_0 --tokenizer-dir " +
                   quote(sd::test::fixtures_dir() + "/tokenizers") + " -t 2 >/dev/null 2>&1";
        },
        sd::test::file_bytes(in) * 17 / 32);  // q8_0: 34 bytes a 32 weights, from 16-bit ones
    return path;
}

// A side x side RGB gradient written as a PNG to a temp path: an init or reference image.
inline std::string gradient_png(const std::string& name, uint32_t side) {
    sd::image::Image img{side, side, 3, {}};
    for (uint32_t y = 0; y < side; ++y)
        for (uint32_t x = 0; x < side; ++x)
            for (uint32_t c = 0; c < 3; ++c)
                img.pixels.push_back(static_cast<uint8_t>((x * 3 + c * 70 + y * 2) % 256));
    const std::string path = sd::test::temp_path(name);
    sd::image::write_image(path, img);
    return path;
}

}  // namespace cli
