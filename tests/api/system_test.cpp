// Callbacks, system facts and the entry points whose engine parts are not built yet: every
// failure is a false / NULL result plus a message through the log callback.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/callbacks.h"
#include "base/log.h"
#include "stable-diffusion.h"

namespace {

struct Captured {
    std::vector<std::pair<sd_log_level_t, std::string>> lines;
    std::string all() const {
        std::string s;
        for (const auto& l : lines) s += l.second;
        return s;
    }
};

void capture(sd_log_level_t level, const char* text, void* data) {
    static_cast<Captured*>(data)->lines.push_back({level, text});
}

class LogCapture {
  public:
    LogCapture() { sd_set_log_callback(capture, &captured); }
    ~LogCapture() { sd_set_log_callback(nullptr, nullptr); }
    Captured captured;
};

TEST(System, LogCallbackGetsEveryLevel) {
    LogCapture log;
    SD_LOG_DEBUG("debug %d", 1);
    SD_LOG_INFO("info");
    SD_LOG_WARN("warn");
    SD_LOG_ERROR("error %s", "x");
    ASSERT_EQ(log.captured.lines.size(), 4u);
    EXPECT_EQ(log.captured.lines[0].first, SD_LOG_DEBUG);
    EXPECT_EQ(log.captured.lines[0].second, "debug 1\n");
    EXPECT_EQ(log.captured.lines[3].first, SD_LOG_ERROR);
    EXPECT_EQ(log.captured.lines[3].second, "error x\n");
}

TEST(System, LogCallbackCanBeRemoved) {
    Captured captured;
    sd_set_log_callback(capture, &captured);
    sd_set_log_callback(nullptr, nullptr);
    testing::internal::CaptureStderr();
    SD_LOG_INFO("to stderr");
    SD_LOG_DEBUG("dropped");
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(captured.lines.empty());
    EXPECT_NE(err.find("to stderr"), std::string::npos);
    EXPECT_EQ(err.find("dropped"), std::string::npos);
}

struct Progress {
    int step = 0, steps = 0;
    float time = 0;
    int calls = 0;
};

TEST(System, ProgressCallback) {
    sd::api::report_progress(1, 2, 0.5f);  // no callback: nothing happens
    Progress p;
    sd_set_progress_callback(
        [](int step, int steps, float time, void* data) {
            auto* p = static_cast<Progress*>(data);
            p->step = step;
            p->steps = steps;
            p->time = time;
            ++p->calls;
        },
        &p);
    sd::api::report_progress(3, 20, 1.25f);
    EXPECT_EQ(p.calls, 1);
    EXPECT_EQ(p.step, 3);
    EXPECT_EQ(p.steps, 20);
    EXPECT_EQ(p.time, 1.25f);
    sd_set_progress_callback(nullptr, nullptr);
    sd::api::report_progress(4, 20, 1.f);
    EXPECT_EQ(p.calls, 1);
}

TEST(System, PreviewCallback) {
    int calls = 0;
    auto cb = [](int, int frame_count, sd_image_t*, bool is_noisy, void* data) {
        ++*static_cast<int*>(data);
        EXPECT_EQ(frame_count, 1);
        EXPECT_TRUE(is_noisy);
    };
    sd_set_preview_callback(cb, PREVIEW_PROJ, 0, true, false, &calls);
    sd::api::PreviewSettings s = sd::api::preview_settings();
    EXPECT_EQ(s.mode, PREVIEW_PROJ);
    EXPECT_EQ(s.interval, 1);  // fixed up from 0
    EXPECT_TRUE(s.denoised);
    EXPECT_FALSE(s.noisy);
    sd_image_t frame{1, 1, 3, nullptr};
    sd::api::report_preview(1, 1, &frame, true);
    EXPECT_EQ(calls, 1);
    sd_set_preview_callback(cb, PREVIEW_NONE, 1, true, false, &calls);
    sd::api::report_preview(2, 1, &frame, true);
    EXPECT_EQ(calls, 1);
    sd_set_preview_callback(nullptr, PREVIEW_NONE, 1, false, false, nullptr);
}

TEST(System, Facts) {
    EXPECT_GE(sd_get_num_physical_cores(), 1);
    std::string info = sd_get_system_info();
    EXPECT_EQ(info.rfind("System Info:", 0), 0u);
    EXPECT_NE(info.find("AVX2 = "), std::string::npos);
    EXPECT_NE(info.find("kernels = "), std::string::npos);
    EXPECT_GT(std::strlen(sd_version()), 0u);
    EXPECT_GT(std::strlen(sd_commit()), 0u);
    EXPECT_FALSE(sd_ctx_supports_image_generation(nullptr));
    EXPECT_FALSE(sd_ctx_supports_video_generation(nullptr));
}

TEST(System, FreeFunctionsTakeWhatTheLibraryAllocates) {
    free_sd_images(nullptr, 3);
    free_sd_audio(nullptr);
    auto* images = static_cast<sd_image_t*>(std::calloc(2, sizeof(sd_image_t)));
    images[0].data = static_cast<uint8_t*>(std::malloc(12));
    free_sd_images(images, 2);
    auto* audio = static_cast<sd_audio_t*>(std::calloc(1, sizeof(sd_audio_t)));
    audio->data = static_cast<float*>(std::malloc(16));
    free_sd_audio(audio);
}

TEST(System, FailuresAreFalseOrNullWithAMessage) {
    LogCapture log;
    sd_ctx_params_t ctx_params;
    sd_ctx_params_init(&ctx_params);
    ctx_params.model_path = "/nonexistent/model.safetensors";
    EXPECT_EQ(new_sd_ctx(&ctx_params), nullptr);
    EXPECT_FALSE(log.captured.all().empty());
    free_sd_ctx(nullptr);
    sd_img_gen_params_t gen;
    sd_img_gen_params_init(&gen);
    sd_image_t* images = reinterpret_cast<sd_image_t*>(0x1);
    int count = 7;
    EXPECT_FALSE(generate_image(nullptr, &gen, &images, &count));
    EXPECT_EQ(images, nullptr);
    EXPECT_EQ(count, 0);
    sd_cancel_generation(nullptr, SD_CANCEL_ALL);
}

TEST(System, UnbuiltPartsFailCleanly) {
    LogCapture log;
    sd_image_t* images = reinterpret_cast<sd_image_t*>(0x1);
    int count = 7;
    sd_vid_gen_params_t vid;
    sd_vid_gen_params_init(&vid);
    sd_audio_t* audio = nullptr;
    EXPECT_FALSE(generate_video(nullptr, &vid, &images, &count, &audio));
    EXPECT_EQ(images, nullptr);
    EXPECT_EQ(count, 0);
    EXPECT_NE(log.captured.all().find("generate_video: needs a context"), std::string::npos);
    EXPECT_FALSE(sd_ctx_supports_video_generation(nullptr));
    EXPECT_EQ(new_upscaler_ctx("x.pth", false, 1, 128, nullptr, nullptr), nullptr);
    sd_image_t input{0, 0, 3, nullptr};
    EXPECT_FALSE(upscale(nullptr, input, 4, &images, &count));
    free_upscaler_ctx(nullptr);
    EXPECT_FALSE(preprocess_canny(input, 0.08f, 0.08f, 0.8f, 1.f, false));
}

// Each entry point of a feature not built yet fails with one line naming it.
TEST(System, EveryUnbuiltFunctionSaysSo) {
    auto expect_one_line = [](const char* feature, auto&& call) {
        LogCapture log;
        EXPECT_FALSE(call()) << feature;
        ASSERT_EQ(log.captured.lines.size(), 1u) << feature;
        EXPECT_EQ(log.captured.lines[0].first, SD_LOG_ERROR);
        EXPECT_NE(log.captured.lines[0].second.find("not built yet"), std::string::npos);
        EXPECT_NE(log.captured.lines[0].second.find(feature), std::string::npos)
            << log.captured.lines[0].second;
    };
    sd_image_t input{0, 0, 3, nullptr};
    sd_image_t* images = nullptr;
    int count = 0;
    expect_one_line("ADetailer",
                    [] { return new_adetailer_ctx("d.pt", 1, nullptr, nullptr) != nullptr; });
    expect_one_line("ADetailer", [&] {
        return adetail_image(nullptr, nullptr, input, nullptr, nullptr, &images, &count);
    });
    expect_one_line("ggml graph", [] {
        sd_set_backend_eval_callback([](ggml_tensor*, bool, void*) { return true; }, nullptr);
        return false;
    });
    EXPECT_FALSE(sd_ctx_has_control_net(nullptr));
    free_adetailer_ctx(nullptr);
    LogCapture quiet;
    sd_set_backend_eval_callback(nullptr, nullptr);  // clearing it is not an error
    EXPECT_TRUE(quiet.captured.lines.empty());
}

TEST(System, ListDevicesNamesTheCpu) {
    const size_t need = sd_list_devices(nullptr, 0);
    ASSERT_GT(need, 4u);
    std::string text(need + 1, 'x');
    EXPECT_EQ(sd_list_devices(text.data(), text.size()), need);
    text.resize(need);
    EXPECT_EQ(text.rfind("CPU\t", 0), 0u) << text;
    EXPECT_EQ(text.back(), '\n');
    EXPECT_NE(text.find("GiB RAM"), std::string::npos) << text;
    char small[4] = {'a', 'b', 'c', 'd'};
    EXPECT_EQ(sd_list_devices(small, sizeof small), need);
    EXPECT_STREQ(small, "CPU");  // truncated, still terminated
}

}  // namespace
