#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/cpu_features.h"
#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "test_util.h"

namespace sd {
namespace {

TEST(Error, CheckThrowsWithFormattedMessage) {
    try {
        SD_CHECK(1 + 1 == 3, "bad value %d for '%s'", 42, "steps");
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "bad value 42 for 'steps'");
    }
    EXPECT_NO_THROW(SD_CHECK(true, "never"));
}

struct Captured {
    std::vector<std::pair<LogLevel, std::string>> lines;
};

TEST(Log, CallbackReceivesMessagesAtOrAboveLevel) {
    Captured cap;
    set_log_callback(
        [](LogLevel level, const char* text, void* user) {
            static_cast<Captured*>(user)->lines.emplace_back(level, text);
        },
        &cap);
    set_log_level(LogLevel::Info);
    SD_LOG_DEBUG("hidden %d", 1);
    SD_LOG_INFO("loaded %s", "model");
    SD_LOG_ERROR("broken");
    set_log_callback(nullptr, nullptr);
    ASSERT_EQ(cap.lines.size(), 2u);
    EXPECT_EQ(cap.lines[0].first, LogLevel::Info);
    EXPECT_EQ(cap.lines[0].second, "loaded model\n");
    EXPECT_EQ(cap.lines[1].first, LogLevel::Error);
}

TEST(CpuFeatures, DetectsConsistentSet) {
    const CpuFeatures& f = cpu_features();
    EXPECT_GE(f.physical_cores, 1);
    EXPECT_GE(f.logical_cpus, f.physical_cores);
    if (f.avx2) {
        EXPECT_TRUE(f.avx);
    }
    if (f.avx512bw) {
        EXPECT_TRUE(f.avx512f);
    }
    EXPECT_FALSE(f.describe().empty());
    // Lowering the kernel family works and never rises above what is supported.
    Isa best = best_supported_isa();
    set_isa(Isa::Generic);
    EXPECT_EQ(active_isa(), Isa::Generic);
    set_isa(Isa::Avx512);
    EXPECT_LE(static_cast<int>(active_isa()), static_cast<int>(best));
    set_isa(best);
}

TEST(MappedFile, MapsContentsAndReportsMissingFile) {
    std::string path = test::temp_path("sd_mapped_file_test.bin");
    {
        std::ofstream f(path, std::ios::binary);
        f << "hello mapped world";
    }
    auto file = MappedFile::open(path);
    ASSERT_EQ(file->size(), 18u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(file->data()), 5), "hello");
    file->release_pages(0, file->size());  // harmless on a partial page
    std::remove(path.c_str());

    try {
        MappedFile::open("/nonexistent/dir/model.safetensors");
        FAIL() << "no throw";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.safetensors"),
                  std::string::npos);
    }
    EXPECT_THROW(MappedFile::open("/tmp"), Error);  // a directory
}

TEST(Clock, IsMonotonic) {
    double a = now_seconds();
    double b = now_seconds();
    EXPECT_LE(a, b);
    // Read in order: a macro's two arguments may be evaluated either way round.
    const int64_t first = now_microseconds();
    const int64_t second = now_microseconds();
    EXPECT_LE(first, second);
}

}  // namespace
}  // namespace sd
