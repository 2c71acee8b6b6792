// The README stays true: its families table is the registry's (sd-cli --list-families), and
// every family example in it runs. The commands are read from the README itself; the model
// files they name are mapped to the generated fixtures of those layouts, and the size and
// steps are lowered so each runs in seconds.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/tiny_wan.h"
#include "families/registry.h"
#include "fixture_files.h"
#include "io/io_test_util.h"
#include "models/tiny_flux.h"
#include "models/tiny_wan_vae.h"
#include "run_cli.h"
#include "stable-diffusion-ext.h"
#include "test_util.h"

namespace sd {
namespace {

std::string readme() {
    std::ifstream in(test::tests_source_dir() + "/../README.md");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

struct Example {
    std::string family;  // from "<!-- example: FAMILY -->"
    std::string command;
};

void PrintTo(const Example& e, std::ostream* os) {
    *os << e.family;
}

// Each "<!-- example: FAMILY -->" followed by a ```sh block: the block's lines, continuation
// backslashes joined.
std::vector<Example> readme_examples(const std::string& text) {
    std::vector<Example> out;
    const std::string marker = "<!-- example: ";
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
        const size_t name_end = text.find(" -->", at);
        const size_t open = text.find("```sh\n", name_end);
        const size_t close = text.find("\n```", open + 6);
        if (name_end == std::string::npos || open == std::string::npos ||
            close == std::string::npos)
            break;
        std::string command = text.substr(open + 6, close - open - 6);
        for (size_t bs; (bs = command.find("\\\n")) != std::string::npos;)
            command.replace(bs, 2, " ");
        out.push_back({text.substr(at + marker.size(), name_end - at - marker.size()), command});
    }
    return out;
}

// The files users download, as the README names them, and the generated fixture of the same
// layout (random weights, smaller depth where the fixtures README says so).
const std::map<std::string, std::string>& fixture_for_file() {
    static const std::map<std::string, std::string> map = {
        {"v1-5-pruned-emaonly.safetensors", "sd15_f16_seed1.safetensors"},
        {"v2-1_768-ema-pruned.safetensors", "sd21_f16_seed2.safetensors"},
        {"sd_xl_base_1.0.safetensors", "sdxl_f16_seed3.safetensors"},
        {"sd3_medium.safetensors", "sd3/sd3_medium_f16_seed20.safetensors"},
        {"clip_l.safetensors", "flux/clip_l_f16_seed12.safetensors"},
        {"clip_g.safetensors", "sd3/clip_g_f16_seed21.safetensors"},
        {"t5xxl_fp16.safetensors", "flux/t5xxl_l2_f16_seed13.safetensors"},
        {"flux1-dev.safetensors", "flux/flux_dev_d2s2_bf16_seed10.safetensors"},
        {"Chroma1-HD.safetensors", "chroma/chroma_d2s2_bf16_seed70.safetensors"},
        {"ae.safetensors", "flux/flux_ae_f32_seed11.safetensors"},
        {"z_image_turbo_bf16.safetensors", "zimage/zimage_turbo_d2_bf16_seed30.safetensors"},
        {"qwen_3_4b.safetensors", "qwen3/qwen3_4b_bf16_seed31.safetensors"},
        {"flux-2-klein-4b.safetensors", "flux2/flux2_klein_4b_d2s2_bf16_seed50.safetensors"},
        {"flux2-vae.safetensors", "flux2/flux2_ae_f32_seed52.safetensors"},
        {"qwen_image_bf16.safetensors", "qwen_image/qwen_image_d2_bf16_seed40.safetensors"},
        {"qwen_2.5_vl_7b.safetensors", "qwen_image/qwen2_5_vl_7b_l2_vis2_bf16_seed41.safetensors"},
        {"qwen_image_vae.safetensors", "wan/wan21_vae_f32_seed42.safetensors"},
        {"wan2.1_t2v_1.3B_fp16.safetensors", "wan/wan21_t2v_1_3b_bf16_seed60.safetensors"},
        {"umt5_xxl_fp16.safetensors", "wan/umt5_xxl_l2_bf16_seed61.safetensors"},
        {"wan_2.1_vae.safetensors", "wan/wan21_vae_f32_seed42.safetensors"},
    };
    return map;
}

// Files the fixtures have no manifest for: made here at tiny widths in the real layout (a
// one-block TI2V DiT reading UMT5's 4096-wide states, a Wan 2.2 VAE of 48 channels, a
// Chroma-Radiance DiT reading T5-XXL's).
const std::map<std::string, std::string (*)()>& generated_for_file() {
    static const std::map<std::string, std::string (*)()> map = {
        {"wan2.2_ti2v_5B_fp16.safetensors", [] { return test::tiny_wan_dit(48, 4096); }},
        {"wan2.2_vae.safetensors",
         [] { return test::write_f32_safetensors(test::TinyWan22Vae(48).p, "readme_wan22_vae"); }},
        {"Chroma1-Radiance-v0.4.safetensors",
         [] {
             test::Params named;
             for (auto& [name, t] : test::tiny_chroma_radiance(1, 1, 2, false, false, 4096))
                 named["model.diffusion_model." + name] = t;
             return test::write_f32_safetensors(named, "readme_radiance");
         }},
    };
    return map;
}

// The file standing for `name` as the README writes it; "" when there is none.
std::string file_for(const std::string& name) {
    auto fixture = fixture_for_file().find(name);
    if (fixture != fixture_for_file().end()) return test::fixture_file(fixture->second);
    auto generated = generated_for_file().find(name);
    return generated != generated_for_file().end() ? generated->second() : "";
}

// What a fixture lacks that the real file has: the fixture's SD3 file holds the MMDiT alone,
// sd3_medium.safetensors also its VAE.
std::vector<std::string> fixture_extras(const std::string& family) {
    if (family == "SD3")
        return {"--vae", test::fixture_file("flux/flux_ae_f32_seed11.safetensors")};
    return {};
}

TEST(Readme, FamiliesTableIsTheRegistrys) {
    const std::string text = readme();
    const std::string begin = "<!-- families table: the output of sd-cli --list-families";
    const std::string end = "<!-- end of the families table -->";
    const size_t at = text.find(begin);
    ASSERT_NE(at, std::string::npos) << "README.md has no families table marker";
    const size_t table = text.find('\n', at) + 1;
    const size_t stop = text.find(end, table);
    ASSERT_NE(stop, std::string::npos);
    EXPECT_EQ(text.substr(table, stop - table), std::string(sd_model_families_table()))
        << "the README's families table is stale: paste the output of sd-cli --list-families";
}

TEST(Readme, EveryFamilyThatRunsHasAnExample) {
    std::set<std::string> with_example;
    for (const Example& e : readme_examples(readme())) with_example.insert(e.family);
    int runnable = 0;
    for (const Family* f : families()) {
        if (!f->assemble) continue;
        ++runnable;
        EXPECT_TRUE(with_example.count(f->name)) << f->name << " has no example in README.md";
    }
    EXPECT_GE(runnable, 6);
}

class ReadmeExample : public testing::TestWithParam<Example> {};

TEST_P(ReadmeExample, RunsOnTheFixtures) {
    const Example& example = GetParam();
    std::vector<std::string> args = cli::split_args(example.command);
    ASSERT_FALSE(args.empty());
    ASSERT_EQ(args[0], "sd-cli") << example.command;
    args.erase(args.begin());
    for (std::string& arg : args) {
        if (arg.find(".safetensors") == std::string::npos && arg.find(".gguf") == std::string::npos)
            continue;
        const std::string file = file_for(arg);
        ASSERT_FALSE(file.empty())
            << "the README names " << arg << ": add the fixture of its layout to this test";
        arg = file;
    }
    for (const std::string& extra : fixture_extras(example.family)) args.push_back(extra);
    // A video example writes one file a frame: named by a %03d pattern, the first checked.
    const bool video = std::find(args.begin(), args.end(), "vid_gen") != args.end();
    const std::string stem = "readme_" + std::to_string(::getpid());
    const std::filesystem::path tmp = std::filesystem::temp_directory_path();
    const std::filesystem::path out = tmp / (stem + (video ? "_%03d.png" : ".png"));
    const std::filesystem::path first = video ? tmp / (stem + "_000.png") : out;
    // Small and short: what is checked is that the command as written runs the family.
    for (const char* a : {"-W", "64", "-H", "64", "--steps", "1", "-t", "2"}) args.push_back(a);
    args.push_back("-o");
    args.push_back(out.string());
    // T5's vocabulary is not built in: the fixtures' copy stands for the user's spiece.model.
    ::setenv("SD_TOKENIZER_DIR", (test::fixtures_dir() + "/tokenizers").c_str(), 1);
    const cli::RunResult r = cli::run_cli(args);
    ::unsetenv("SD_TOKENIZER_DIR");
    EXPECT_EQ(r.exit_code, 0) << example.command << "\n" << r.output;
    EXPECT_NE(r.output.find("model family: " + example.family), std::string::npos) << r.output;
    EXPECT_TRUE(std::filesystem::exists(first)) << r.output;
    for (const auto& e : std::filesystem::directory_iterator(tmp)) {
        if (e.path().filename().string().rfind(stem + (video ? "_" : "."), 0) == 0)
            std::filesystem::remove(e.path());
    }
}

std::string example_name(const testing::TestParamInfo<Example>& info) {
    std::string name;
    for (char c : info.param.family) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return name;
}

INSTANTIATE_TEST_SUITE_P(Readme, ReadmeExample, testing::ValuesIn(readme_examples(readme())),
                         example_name);

}  // namespace
}  // namespace sd
