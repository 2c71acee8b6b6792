// The ControlNet parts of the C API on the SD 1.5 fixture: control_net_path at context
// creation, the hot-swap functions (a failed load keeps what was loaded), and a generation
// with a control image of another size than the image (fitted, as the reference does).
// The ControlNets are sparse files of the real layout (zero weights: zero residuals), so a
// generation with one must give the same image as without.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fixture_files.h"
#include "stable-diffusion.h"
#include "test_util.h"

namespace sd {
namespace {

struct Log {
    std::string text;
};

class ControlNetApi : public testing::Test {
  protected:
    void SetUp() override {
        sd_set_log_callback(
            [](sd_log_level_t, const char* t, void* d) { static_cast<Log*>(d)->text += t; }, &log_);
        ::setenv("SD_TOKENIZER_DIR", (test::fixtures_dir() + "/tokenizers").c_str(), 1);
        model_ = test::generated_checkpoint("sd15", "f16", 1);
        control_ = test::temp_path("cn_api_sparse.safetensors");
        test::run_or_fail("/usr/bin/python3 " + test::tests_source_dir() +
                          "/tools/write_sparse_checkpoint.py " + test::fixtures_dir() +
                          "/manifests/controlnet_sd15.tsv " + control_);
    }
    void TearDown() override { sd_set_log_callback(nullptr, nullptr); }

    sd_ctx_t* context(const char* control_net) {
        sd_ctx_params_t cp;
        sd_ctx_params_init(&cp);
        cp.model_path = model_.c_str();
        cp.control_net_path = control_net;
        cp.n_threads = 2;
        return new_sd_ctx(&cp);
    }

    std::vector<uint8_t> generate(sd_ctx_t* ctx, const sd_image_t& control) {
        sd_img_gen_params_t p;
        sd_img_gen_params_init(&p);
        p.prompt = "a lovely cat";
        p.width = p.height = 64;
        p.sample_params.sample_steps = 1;
        p.seed = 42;
        p.control_image = control;
        sd_image_t* images = nullptr;
        int count = 0;
        EXPECT_TRUE(generate_image(ctx, &p, &images, &count)) << log_.text;
        std::vector<uint8_t> out;
        if (count == 1) out.assign(images[0].data, images[0].data + 64 * 64 * 3);
        free_sd_images(images, count);
        return out;
    }

    Log log_;
    std::string model_, control_;
};

TEST_F(ControlNetApi, LoadAtCreationHotSwapAndRefusals) {
    EXPECT_EQ(context("/nonexistent/cn.safetensors"), nullptr);
    EXPECT_NE(log_.text.find("/nonexistent/cn.safetensors"), std::string::npos) << log_.text;
    EXPECT_EQ(context(model_.c_str()), nullptr);  // a checkpoint is not a ControlNet
    EXPECT_NE(log_.text.find("is not a ControlNet"), std::string::npos) << log_.text;

    sd_ctx_t* ctx = context(control_.c_str());
    ASSERT_NE(ctx, nullptr) << log_.text;
    EXPECT_TRUE(sd_ctx_has_control_net(ctx));
    EXPECT_FALSE(sd_ctx_load_control_net(ctx, model_.c_str()));  // refused, the old one stays
    EXPECT_TRUE(sd_ctx_has_control_net(ctx));
    EXPECT_FALSE(sd_ctx_load_control_net(ctx, nullptr));
    EXPECT_TRUE(sd_ctx_unload_control_net(ctx));
    EXPECT_FALSE(sd_ctx_has_control_net(ctx));
    EXPECT_TRUE(sd_ctx_load_control_net(ctx, control_.c_str())) << log_.text;
    EXPECT_TRUE(sd_ctx_has_control_net(ctx));
    free_sd_ctx(ctx);
    EXPECT_FALSE(sd_ctx_has_control_net(nullptr));
    EXPECT_FALSE(sd_ctx_unload_control_net(nullptr));
}

TEST_F(ControlNetApi, ControlImageOfAnotherSizeIsFitted) {
    sd_ctx_t* ctx = context(nullptr);
    ASSERT_NE(ctx, nullptr) << log_.text;
    const std::vector<uint8_t> plain = generate(ctx, {0, 0, 3, nullptr});
    ASSERT_TRUE(sd_ctx_load_control_net(ctx, control_.c_str())) << log_.text;
    std::vector<uint8_t> hint(40 * 24 * 3);
    for (size_t i = 0; i < hint.size(); ++i) hint[i] = static_cast<uint8_t>(i * 7);
    const std::vector<uint8_t> controlled = generate(ctx, {40, 24, 3, hint.data()});
    ASSERT_EQ(controlled.size(), plain.size());
    EXPECT_EQ(controlled, plain);  // zero residuals change nothing
    free_sd_ctx(ctx);
}

}  // namespace
}  // namespace sd
