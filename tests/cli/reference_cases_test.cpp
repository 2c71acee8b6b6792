// Every case of ../shared/fixtures/reference/{sd15,sd21}/cases.tsv, run through sd-cli as
// that file says (in the cases' folder, on the generated fixture checkpoint), must give an
// image within 40 dB PSNR of the reference PNG.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "test_util.h"

namespace sd {
namespace {

struct ReferenceCase {
    std::string family;    // folder under reference/
    std::string manifest;  // the fixture it runs on
    int seed;
    std::string id;
    std::vector<std::string> args;
};

// Splits a cases.tsv argument string as a POSIX shell would for plain and "quoted" words.
std::vector<std::string> split_args(const std::string& text) {
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

std::vector<ReferenceCase> load_cases() {
    const std::pair<const char*, std::pair<const char*, int>> families[] = {{"sd15", {"sd15", 1}},
                                                                            {"sd21", {"sd21", 2}}};
    std::vector<ReferenceCase> cases;
    for (const auto& [family, fixture] : families) {
        std::ifstream in(test::fixtures_dir() + "/reference/" + family + "/cases.tsv");
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') continue;
            size_t tab = line.find('\t');
            if (tab == std::string::npos) continue;
            cases.push_back({family, fixture.first, fixture.second, line.substr(0, tab),
                             split_args(line.substr(tab + 1))});
        }
    }
    return cases;
}

void PrintTo(const ReferenceCase& c, std::ostream* os) {
    *os << c.family << "/" << c.id;
}

class ReferenceCaseTest : public testing::TestWithParam<ReferenceCase> {};

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

TEST_P(ReferenceCaseTest, MatchesTheReferenceImage) {
    const ReferenceCase& c = GetParam();
    const std::string folder = test::fixtures_dir() + "/reference/" + c.family;
    const std::string model = test::generated_checkpoint(c.manifest, "f16", c.seed);
    const std::string out = testing::TempDir() + "/sd_reference_" + c.family + "_" + c.id + ".png";
    std::string command = "cd " + shell_quote(folder) + " && " + shell_quote(SD_CLI_PATH) + " -m " +
                          shell_quote(model) + " --tokenizer-dir " +
                          shell_quote(test::fixtures_dir() + "/tokenizers");
    for (const std::string& a : c.args) command += " " + shell_quote(a);
    command += " -t 2 -o " + shell_quote(out) + " 2>&1";
    std::printf("%s\n", command.c_str());
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    image::Image got = image::read_image(out, 3);
    image::Image want = image::read_image(folder + "/" + c.id + ".png", 3);
    ASSERT_EQ(got.width, want.width);
    ASSERT_EQ(got.height, want.height);
    const double p = test::psnr(got.pixels, want.pixels);
    std::printf("%s/%s: PSNR %.2f dB\n", c.family.c_str(), c.id.c_str(), p);
    RecordProperty("psnr_db", std::to_string(p));
    EXPECT_GE(p, 40.0);
    std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceCaseTest, testing::ValuesIn(load_cases()),
                         [](const testing::TestParamInfo<ReferenceCase>& info) {
                             return info.param.family + "_" + info.param.id;
                         });

TEST(ReferenceCases, AllFamiliesHaveCases) {
    size_t sd15 = 0, sd21 = 0;
    for (const ReferenceCase& c : load_cases()) (c.family == "sd15" ? sd15 : sd21)++;
    EXPECT_GE(sd15, 4u);
    EXPECT_GE(sd21, 2u);
}

}  // namespace
}  // namespace sd
