// The role table against the C API: every component-file field of sd_ctx_params_t (read
// from include/stable-diffusion.h) is a role, each role's pointer-to-member is the field it
// names (offsets of the ABI table), each option is spelled as the reference's sd-cli; and
// the context's refusals of a file given for a role: before loading when no family takes
// the role, naming the family when the model's does not.
#include "api/role_paths.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "fixture_files.h"
#include "io/io_test_util.h"
#include "io/tensor_writer.h"
#include "stable-diffusion.h"
#include "test_util.h"

namespace sd {
namespace {

// Files of sd_ctx_params_t that are models of their own, loaded by their own code (not
// merged into the model's namespace): no component role.
const std::set<std::string> kSideModels = {"taesd_path",       "control_net_path",
                                           "ip_adapter_path",  "motion_module_path",
                                           "photo_maker_path", "pulid_weights_path"};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The `const char* X_path;` fields of sd_ctx_params_t in the public header.
std::set<std::string> header_path_fields() {
    const std::string header =
        read_text(test::tests_source_dir() + "/../include/stable-diffusion.h");
    const size_t end = header.find("} sd_ctx_params_t;");
    EXPECT_NE(end, std::string::npos);
    const size_t begin = header.rfind("typedef struct {", end);
    EXPECT_NE(begin, std::string::npos);
    const std::string body = header.substr(begin, end - begin);
    std::set<std::string> fields;
    const std::regex field(R"(const\s+char\s*\*\s*(\w+_path)\s*;)");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), field);
         it != std::sregex_iterator(); ++it)
        fields.insert((*it)[1]);
    return fields;
}

TEST(RolePaths, EveryComponentFileOfTheHeaderIsARole) {
    const std::set<std::string> header = header_path_fields();
    ASSERT_GT(header.size(), 15u);
    std::set<std::string> roles;
    for (const ComponentRole& r : component_roles()) {
        EXPECT_TRUE(header.count(r.c_field)) << r.c_field << " is not in sd_ctx_params_t";
        roles.insert(r.c_field);
    }
    for (const std::string& f : header) {
        EXPECT_TRUE(roles.count(f) || kSideModels.count(f))
            << f << ": a file of sd_ctx_params_t that is neither a role nor a side model";
    }
}

TEST(RolePaths, EachMemberIsTheFieldItsRoleNames) {
    // field <tab> struct <tab> name <tab> type <tab> offset <tab> size
    std::map<std::string, size_t> offsets;
    std::ifstream tsv(test::tests_source_dir() + "/c_api/c_api_abi.tsv");
    for (std::string line; std::getline(tsv, line);) {
        std::vector<std::string> cols;
        std::stringstream s(line);
        for (std::string c; std::getline(s, c, '\t');) cols.push_back(c);
        if (cols.size() >= 5 && cols[0] == "field" && cols[1] == "sd_ctx_params_t")
            offsets[cols[2]] = std::stoul(cols[4]);
    }
    ASSERT_FALSE(offsets.empty());
    sd_ctx_params_t p{};
    for (const ComponentRole& r : component_roles()) {
        const char* const* member = &(p.*api::kRolePaths[static_cast<size_t>(r.role)].path);
        const size_t offset = static_cast<size_t>(reinterpret_cast<const char*>(member) -
                                                  reinterpret_cast<const char*>(&p));
        ASSERT_TRUE(offsets.count(r.c_field)) << r.c_field;
        EXPECT_EQ(offset, offsets[r.c_field]) << r.c_field;
        p.*api::kRolePaths[static_cast<size_t>(r.role)].path = r.c_field;
        EXPECT_STREQ(api::role_path(p, r.role), r.c_field);
    }
}

TEST(RolePaths, OptionsAreTheReferenceFlags) {
    std::set<std::string> flags;
    std::ifstream in(test::fixtures_dir() + "/cli/sd-cli-flags.txt");
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) flags.insert(line);
    ASSERT_FALSE(flags.empty());
    for (const ComponentRole& r : component_roles()) {
        EXPECT_TRUE(flags.count(r.option)) << r.option;
        if (r.short_option[0]) {
            EXPECT_TRUE(flags.count(r.short_option)) << r.short_option;
        }
        if (r.old_option[0]) {
            EXPECT_TRUE(flags.count(r.old_option)) << r.old_option;
        }
    }
}

struct Log {
    std::string text;
};

class RoleRefusals : public testing::Test {
  protected:
    void SetUp() override {
        sd_set_log_callback(
            [](sd_log_level_t, const char* t, void* d) { static_cast<Log*>(d)->text += t; }, &log_);
        ::setenv("SD_TOKENIZER_DIR", (test::fixtures_dir() + "/tokenizers").c_str(), 1);
    }
    void TearDown() override { sd_set_log_callback(nullptr, nullptr); }
    Log log_;
};

// A part no model family takes is refused before any file is read (this one does not exist).
TEST_F(RoleRefusals, APartNoFamilyTakesIsRefusedBeforeLoading) {
    sd_ctx_params_t p;
    sd_ctx_params_init(&p);
    p.model_path = "/nonexistent/model.safetensors";
    p.audio_vae_path = "/nonexistent/audio_vae.safetensors";
    EXPECT_EQ(new_sd_ctx(&p), nullptr);
    EXPECT_NE(log_.text.find("--audio-vae (audio VAE) is not supported by this build yet"),
              std::string::npos)
        << log_.text;
    EXPECT_EQ(log_.text.find("/nonexistent/model"), std::string::npos) << log_.text;
}

// --llm on an SD 1.x model: named with its option and the model's family.
TEST_F(RoleRefusals, AnLlmForAnSd1ModelIsRefusedNamingTheOption) {
    const std::string model = test::generated_checkpoint("sd15", "f16", 1);
    const std::string llm = test::temp_path("role_llm.safetensors");
    write_safetensors(llm, {{"model.layers.0.mlp.up_proj.weight", DType::F32, Shape{2, 2}, [] {
                                 return Tensor::zeros({2, 2});
                             }}});
    sd_ctx_params_t p;
    sd_ctx_params_init(&p);
    p.model_path = model.c_str();
    p.llm_path = llm.c_str();
    p.n_threads = 2;
    sd_ctx_t* ctx = new_sd_ctx(&p);
    EXPECT_EQ(ctx, nullptr);
    free_sd_ctx(ctx);
    EXPECT_NE(log_.text.find("--llm '" + llm + "' is given, but the SD 1.x model takes no LLM"),
              std::string::npos)
        << log_.text;
    // A file that cannot be read is named with the option it came through.
    log_.text.clear();
    p.llm_path = "/nonexistent/llm.gguf";
    EXPECT_EQ(new_sd_ctx(&p), nullptr);
    EXPECT_NE(log_.text.find("--llm: "), std::string::npos) << log_.text;
    std::remove(llm.c_str());
}

}  // namespace
}  // namespace sd
