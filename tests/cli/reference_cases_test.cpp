// Every case of every folder of ../shared/fixtures/reference/ (but those of features not
// built yet, listed below), run through sd-cli as its cases.tsv says (in the cases' folder,
// on the generated fixture checkpoint its header names), must give an image within 40 dB
// PSNR of the reference PNG (more for the folders whose README row says so).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reference_cases.h"

namespace sd {
namespace {

using test::built;
using test::expand_placeholders;
using test::load_cases;
using test::psnr_floor;
using test::reference_folders;
using test::ReferenceCase;
using test::run_case;

// A newcomer's files: with no tokenizer files anywhere, SD 1.5, 2.x and SDXL must give the
// reference images with the CLIP vocabulary built into the binary. The first case of each of
// those families runs so (its other cases run with the fixture's tokenizer files), which shows
// both paths without running any case twice.
bool uses_built_in_vocabulary(const ReferenceCase& c) {
    static const std::vector<ReferenceCase> cases = load_cases();
    if (c.family != "sd15" && c.family != "sd21" && c.family != "sdxl") return false;
    const auto first = std::find_if(cases.begin(), cases.end(),
                                    [&](const ReferenceCase& r) { return r.family == c.family; });
    return first != cases.end() && first->id == c.id;
}

class ReferenceCaseTest : public testing::TestWithParam<ReferenceCase> {};

TEST_P(ReferenceCaseTest, MatchesTheReferenceImage) {
    const ReferenceCase& c = GetParam();
    const bool built_in = uses_built_in_vocabulary(c);
    if (built_in)
        std::printf("%s/%s: no tokenizer files (the built-in vocabulary)\n", c.family.c_str(),
                    c.id.c_str());
    const double p = run_case(c, !built_in);
    RecordProperty("psnr_db", std::to_string(p));
    RecordProperty("tokenizer", built_in ? "built-in" : "fixture files");
    EXPECT_GE(p, psnr_floor(c.family));
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceCaseTest, testing::ValuesIn(load_cases()),
                         [](const testing::TestParamInfo<ReferenceCase>& info) {
                             return info.param.family + "_" + info.param.id;
                         });

TEST(ReferenceCases, EveryBuiltFolderHasCases) {
    std::vector<ReferenceCase> cases = load_cases();
    for (const std::string& folder : reference_folders()) {
        size_t n = std::count_if(cases.begin(), cases.end(),
                                 [&](const ReferenceCase& c) { return c.family == folder; });
        if (built(folder))
            EXPECT_GE(n, 1u) << folder << ": its header names no -m checkpoint, or it has no cases";
        else
            std::printf("reference/%s: not built yet, not run\n", folder.c_str());
    }
    for (const char* family : {"sd15", "sd21", "sdxl"}) {
        EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const ReferenceCase& c) {
            return c.family == family;
        })) << family;
    }
}

// The fixtures README's table is what @FX@ files are made from: its rows must parse.
TEST(ReferenceCases, ReadmeTableNamesTheGeneratedFiles) {
    std::vector<test::ReadmeFixture> rows = test::readme_fixtures();
    auto find = [&](const std::string& name) {
        return std::find_if(rows.begin(), rows.end(),
                            [&](const test::ReadmeFixture& f) { return f.name == name; });
    };
    auto cn = find("cn_sd15_f16_seed4.safetensors");
    ASSERT_NE(cn, rows.end());
    EXPECT_EQ(cn->manifest, "controlnet_sd15");
    EXPECT_EQ(cn->dtype, "f16");
    EXPECT_EQ(cn->seed, 4);
    auto lora = find("loras/lora_sd15_kohya_seed7.safetensors");
    ASSERT_NE(lora, rows.end());
    EXPECT_EQ(lora->manifest, "lora_sd15_kohya");
    EXPECT_EQ(lora->dtype, "");
    EXPECT_EQ(lora->seed, 7);
    EXPECT_NE(find("sd15_f16_seed1.safetensors"), rows.end());
    EXPECT_EQ(expand_placeholders("--x=@CASES@/a.png", "/c"), "--x=/c/a.png");
}

}  // namespace
}  // namespace sd
