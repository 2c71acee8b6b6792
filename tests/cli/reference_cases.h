// The cases of ../shared/fixtures/reference/: every folder's cases.tsv (but those of features
// not built yet), run through sd-cli as it says (in the cases' folder, on the generated fixture
// checkpoint its header names) and compared with the reference PNGs. Used by
// reference_cases_test.cpp (every case on the CPU) and the Vulkan cases test.
#pragma once

#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "run_cli.h"
#include "test_util.h"

namespace sd::test {

struct ReferenceCase {
    std::string family;    // folder under reference/
    std::string manifest;  // the fixture it runs on (-m), from the header's file name
    std::string dtype;
    int seed;
    std::string id;
    std::vector<std::string> args;
};

// Folders whose feature this build does not have yet, with the issue that builds it. Every
// other folder runs: a new family's cases run as soon as its folder appears.
// An entry is a folder, or one case of it ("folder/id").
inline const std::vector<std::pair<const char*, const char*>> kNotBuiltYet = {};

// The PSNR floor of each folder (the fixtures README's table: between how far another prompt
// moves the reference image and how far the reference moves itself with an f32 DiT); 40 dB for
// the others.
inline double psnr_floor(const std::string& folder) {
    static const std::vector<std::pair<const char*, double>> floors = {
        {"zimage", 50.0}, {"chroma", 50.0}, {"flux2", 54.0}, {"qwen_image", 50.0}, {"wan", 48.0}};
    for (const auto& [name, floor] : floors) {
        if (folder == name) return floor;
    }
    return 40.0;
}

// Whether the folder (and, given an id, that case of it) runs.
inline bool built(const std::string& folder, const std::string& id = "") {
    for (const auto& [name, why] : kNotBuiltYet) {
        if (folder == name || (!id.empty() && folder + "/" + id == name)) return false;
    }
    return true;
}

inline std::vector<std::string> reference_folders() {
    std::vector<std::string> out;
    const std::string root = test::fixtures_dir() + "/reference";
    if (DIR* d = ::opendir(root.c_str())) {
        while (dirent* e = ::readdir(d)) {
            std::string name = e->d_name;
            if (name[0] != '.' && test::file_exists(root + "/" + name + "/cases.tsv"))
                out.push_back(name);
        }
        ::closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

inline std::vector<ReferenceCase> load_cases() {
    // The header names the checkpoint as the fixtures README does: MANIFEST_DTYPE_seedN.
    const std::regex checkpoint(R"(-m ([A-Za-z0-9_]+)_(f16|f32|bf16)_seed([0-9]+)\.safetensors)");
    std::vector<ReferenceCase> cases;
    for (const std::string& family : reference_folders()) {
        if (!built(family)) continue;
        std::ifstream in(test::fixtures_dir() + "/reference/" + family + "/cases.tsv");
        std::string manifest, dtype;
        int seed = 0;
        for (std::string line; std::getline(in, line);) {
            std::smatch m;
            if (line.rfind("#", 0) == 0 && std::regex_search(line, m, checkpoint)) {
                manifest = m[1];
                dtype = m[2];
                seed = std::stoi(m[3]);
            }
            if (line.empty() || line[0] == '#') continue;
            size_t tab = line.find('\t');
            // A folder whose cases name their files themselves (flux: --diffusion-model ...)
            // has no -m in its header.
            if (tab == std::string::npos) continue;
            if (!built(family, line.substr(0, tab))) {
                std::printf("reference/%s/%s: not built yet, not run\n", family.c_str(),
                            line.substr(0, tab).c_str());
                continue;
            }
            cases.push_back({family, manifest, dtype, seed, line.substr(0, tab),
                             cli::split_args(line.substr(tab + 1))});
        }
    }
    return cases;
}

inline void PrintTo(const ReferenceCase& c, std::ostream* os) {
    *os << c.family << "/" << c.id;
}

inline std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// `@FX@` is the folder of the generated fixture files (each named under it is generated
// first: a file or a folder such as @FX@/loras), `@CASES@` the case's own folder; a relative
// path into shared/fixtures/ names the fixtures' file.
inline std::string expand_placeholders(std::string arg, const std::string& case_folder) {
    const std::string fx = "@FX@", cases = "@CASES@";
    if (size_t at = arg.find(fx + "/"); at != std::string::npos) {
        size_t end = arg.find_first_of(" :,;", at);
        test::generate_fixtures_under(arg.substr(at + fx.size() + 1, end - at - fx.size() - 1));
    }
    for (size_t at; (at = arg.find(fx)) != std::string::npos;)
        arg.replace(at, fx.size(), test::fixture_cache_dir());
    for (size_t at; (at = arg.find(cases)) != std::string::npos;)
        arg.replace(at, cases.size(), case_folder);
    // A relative path into the shared fixtures ("../../shared/fixtures/reference/sd15/x.png",
    // written from another working folder than the case's) is the fixtures' file.
    const std::string shared = "shared/fixtures/";
    if (size_t at = arg.find(shared); at != std::string::npos && arg.rfind("../", 0) == 0)
        arg = test::fixtures_dir() + "/" + arg.substr(at + shared.size());
    return arg;
}

// A frame's file of an output pattern with a printf-style index ("x_%03d.png", 2 -> "x_002.png").
inline std::string frame_file(const std::string& pattern, int index) {
    static const std::regex spec("%(0?)([0-9]*)d");
    std::smatch m;
    if (!std::regex_search(pattern, m, spec)) return pattern;
    std::string number = std::to_string(index);
    const size_t width = m[2].length() ? std::stoul(m[2].str()) : 0;
    if (number.size() < width) number.insert(0, width - number.size(), m[1].length() ? '0' : ' ');
    return m.prefix().str() + number + m.suffix().str();
}

// PSNR of our image `got` against the reference's `want`; 0 and a failure when a size differs.
inline double compare_image(const ReferenceCase& c, const std::string& got_path,
                            const std::string& want_path) {
    image::Image got = image::read_image(got_path, 3);
    image::Image want = image::read_image(want_path, 3);
    if (got.width != want.width || got.height != want.height) {
        ADD_FAILURE() << c.family << "/" << c.id << ": " << got.width << "x" << got.height
                      << ", want " << want.width << "x" << want.height;
        return 0;
    }
    return test::psnr(got.pixels, want.pixels);
}

// Runs case `c` through sd-cli and returns its PSNR against the reference image (a video's
// case, which names its frames with -o ID_%03d.png, its worst frame's). With
// `fixture_tokenizers` false the fixtures' tokenizer folder is out of the process's reach (no
// --tokenizer-dir, SD_TOKENIZER_DIR unset): the vocabularies come from the files or the binary.
// `extra` goes after the case's arguments (--backend vulkan0).
inline double run_case(const ReferenceCase& c, bool fixture_tokenizers,
                       const std::vector<std::string>& extra = {}) {
    const std::string folder = test::fixtures_dir() + "/reference/" + c.family;
    std::vector<std::string> args = c.args;
    std::string frames;  // the case's own -o pattern: one file a frame
    if (auto o = std::find(args.begin(), args.end(), "-o");
        o != args.end() && o + 1 != args.end()) {
        frames = *(o + 1);
        args.erase(o, o + 2);
    }
    const std::string out = testing::TempDir() + "/sd_reference_" + c.family + "_" +
                            std::to_string(::getpid()) + "_" +
                            (frames.empty() ? c.id + ".png" : frames);
    std::string command =
        "cd " + shell_quote(folder) + " && env -u SD_TOKENIZER_DIR " + shell_quote(SD_CLI_PATH);
    if (!c.manifest.empty())
        command += " -m " + shell_quote(test::generated_checkpoint(c.manifest, c.dtype, c.seed));
    if (fixture_tokenizers)
        command += " --tokenizer-dir " + shell_quote(test::fixtures_dir() + "/tokenizers");
    for (const std::string& a : args) {
        command += ' ';  // appended apart: GCC 12 warns (-Wrestrict) on " " + string here
        command += shell_quote(expand_placeholders(a, folder));
    }
    for (const std::string& a : extra) {
        command += ' ';
        command += shell_quote(a);
    }
    command += " -t 2 -o ";
    command += shell_quote(out);
    command += " 2>&1";
    std::printf("%s\n", command.c_str());
    if (std::system(command.c_str()) != 0) {
        ADD_FAILURE() << command;
        return 0;
    }
    double p = 0;
    if (frames.empty()) {
        p = compare_image(c, out, folder + "/" + c.id + ".png");
        std::remove(out.c_str());
    } else {
        p = INFINITY;
        int count = 0;
        for (; test::file_exists(folder + "/" + frame_file(frames, count)); ++count) {
            const std::string got = frame_file(out, count);
            if (!test::file_exists(got)) {
                ADD_FAILURE() << c.family << "/" << c.id << ": no frame " << count << " (" << got
                              << ")";
                return 0;
            }
            const double frame_psnr =
                compare_image(c, got, folder + "/" + frame_file(frames, count));
            std::printf("%s/%s frame %d: PSNR %.2f dB\n", c.family.c_str(), c.id.c_str(), count,
                        frame_psnr);
            p = std::min(p, frame_psnr);
            std::remove(got.c_str());
        }
        EXPECT_GT(count, 0) << c.family << "/" << c.id << ": no reference frames " << frames;
        EXPECT_FALSE(test::file_exists(frame_file(out, count)))
            << c.family << "/" << c.id << ": more frames than the reference's " << count;
    }
    std::printf("%s/%s: PSNR %.2f dB\n", c.family.c_str(), c.id.c_str(), p);
    return p;
}

}  // namespace sd::test
