// The C API's process-wide settings and facts: log / progress / preview callbacks, CPU
// information, version strings, and releasing what the library handed out.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "api/callbacks.h"
#include "api/placement.h"
#include "base/cpu_features.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "families/family_table.h"
#include "stable-diffusion-ext.h"
#include "stable-diffusion.h"

#ifndef SD_GIT_COMMIT
#define SD_GIT_COMMIT "unknown"
#endif
#ifndef SD_VERSION_STRING
#define SD_VERSION_STRING "unknown"
#endif

namespace sd::api {
namespace {

struct LogTarget {
    sd_log_cb_t callback = nullptr;
    void* data = nullptr;
};

struct ProgressTarget {
    sd_progress_cb_t callback = nullptr;
    void* data = nullptr;
};

std::mutex g_log_mutex;
LogTarget g_log;
std::mutex g_progress_mutex;
ProgressTarget g_progress;
std::mutex g_preview_mutex;
PreviewSettings g_preview;

// Called by sd::log_message with its own lock held; never calls back into the log.
void forward_log(LogLevel level, const char* text, void*) {
    LogTarget target;
    {
        std::lock_guard<std::mutex> lock(g_log_mutex);
        target = g_log;
    }
    if (target.callback) target.callback(static_cast<sd_log_level_t>(level), text, target.data);
}

std::string describe_system() {
    const CpuFeatures& f = cpu_features();
    return strfmt(
        "System Info: \n"
        "    SSE4.2 = %d | AVX = %d | AVX2 = %d | FMA = %d | F16C = %d | AVX512F = %d | "
        "AVX512BW = %d | AVX512VL = %d | AVX512DQ = %d | AVX512_VNNI = %d | AVX512_BF16 = %d | "
        "physical cores = %d | logical CPUs = %d | kernels = %s (best %s)\n",
        f.sse42, f.avx, f.avx2, f.fma, f.f16c, f.avx512f, f.avx512bw, f.avx512vl, f.avx512dq,
        f.avx512vnni, f.avx512bf16, f.physical_cores, f.logical_cpus, isa_name(active_isa()),
        isa_name(best_supported_isa()));
}

}  // namespace

void report_progress(int step, int steps, float seconds) {
    ProgressTarget target;
    {
        std::lock_guard<std::mutex> lock(g_progress_mutex);
        target = g_progress;
    }
    if (target.callback) target.callback(step, steps, seconds, target.data);
}

PreviewSettings preview_settings() {
    std::lock_guard<std::mutex> lock(g_preview_mutex);
    return g_preview;
}

void report_preview(int step, int frame_count, sd_image_t* frames, bool is_noisy) {
    PreviewSettings settings = preview_settings();
    if (settings.callback && settings.mode != PREVIEW_NONE)
        settings.callback(step, frame_count, frames, is_noisy, settings.data);
}

}  // namespace sd::api

extern "C" {

void sd_set_log_callback(sd_log_cb_t sd_log_cb, void* data) {
    {
        std::lock_guard<std::mutex> lock(sd::api::g_log_mutex);
        sd::api::g_log = {sd_log_cb, data};
    }
    // A user callback sees every message and filters itself, as with the reference library.
    sd::set_log_level(sd_log_cb ? sd::LogLevel::Debug : sd::LogLevel::Info);
    sd::set_log_callback(sd_log_cb ? sd::api::forward_log : nullptr, nullptr);
}

void sd_set_progress_callback(sd_progress_cb_t cb, void* data) {
    std::lock_guard<std::mutex> lock(sd::api::g_progress_mutex);
    sd::api::g_progress = {cb, data};
}

void sd_set_preview_callback(sd_preview_cb_t cb, enum preview_t mode, int interval, bool denoised,
                             bool noisy, void* data) {
    std::lock_guard<std::mutex> lock(sd::api::g_preview_mutex);
    sd::api::g_preview = {cb, mode, interval > 0 ? interval : 1, denoised, noisy, data};
}

int32_t sd_get_num_physical_cores(void) {
    return sd::cpu_features().physical_cores;
}

const char* sd_get_system_info(void) {
    thread_local std::string info;
    try {
        info = sd::api::describe_system();
    } catch (...) {
        info = "System Info: unavailable\n";
    }
    return info.c_str();
}

bool sd_ctx_supports_image_generation(const sd_ctx_t* sd_ctx) {
    return sd_ctx != nullptr;
}

const char* sd_commit(void) {
    return SD_GIT_COMMIT;
}

const char* sd_version(void) {
    return SD_VERSION_STRING;
}

void free_sd_images(sd_image_t* result_images, int num_images) {
    if (!result_images) return;
    for (int i = 0; i < num_images; ++i) std::free(result_images[i].data);
    std::free(result_images);
}

void free_sd_audio(sd_audio_t* audio) {
    if (!audio) return;
    std::free(audio->data);
    std::free(audio);
}

}  // extern "C"

extern "C" const char* sd_model_families_table(void) {
    static const std::string table = sd::family_table_markdown();
    return table.c_str();
}

// sd_list_devices: "name<TAB>description" lines (api/placement.h lists them).
extern "C" size_t sd_list_devices(char* buffer, size_t buffer_size) {
    std::string text;
    try {
        for (const sd::api::Device& d : sd::api::list_devices())
            text += d.name + "\t" + d.description + "\n";
    } catch (...) {
        text = "CPU\tCPU\n";
    }
    if (buffer && buffer_size > 0) {
        const size_t n = std::min(text.size(), buffer_size - 1);
        std::memcpy(buffer, text.data(), n);
        buffer[n] = '\0';
    }
    return text.size();
}
