// The fixture cache's bound: least recently used files go first when a new one would not fit,
// and a file a test process holds never goes.
#include "fixture_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace sd::test {
namespace {

class FixtureCache : public testing::Test {
  protected:
    void SetUp() override {
        // A folder of its own for each test: a process holds what it was handed until it exits.
        dir_ = testing::TempDir() + "/sd_fixture_cache_" + std::to_string(::getpid()) + "_" +
               testing::UnitTest::GetInstance()->current_test_info()->name();
        ::mkdir(dir_.c_str(), 0755);
        ::setenv("SD_FIXTURE_CACHE", dir_.c_str(), 1);
        ::setenv("SD_FIXTURE_CACHE_GB", "0.003", 1);  // 3 MB
        ::setenv("SD_FIXTURE_HEADROOM_GB", "0", 1);
    }
    void TearDown() override {
        std::system(("rm -rf '" + dir_ + "'").c_str());
        ::unsetenv("SD_FIXTURE_CACHE");
        ::unsetenv("SD_FIXTURE_CACHE_GB");
        ::unsetenv("SD_FIXTURE_HEADROOM_GB");
    }

    // A 1 MB file another (finished) run left, last used `age` seconds ago.
    std::string leftover(const std::string& name, int age) {
        const std::string path = dir_ + "/" + name;
        std::ofstream(path) << std::string(1'000'000, 'x');
        timeval t[2];
        ::gettimeofday(&t[0], nullptr);
        t[0].tv_sec -= age;
        t[1] = t[0];
        ::utimes(path.c_str(), t);
        return path;
    }

    // make_once of a 1 MB file.
    std::string make(const std::string& name) {
        const std::string path = dir_ + "/" + name;
        make_once(
            path,
            [](const std::string& tmp) { return "head -c 1000000 /dev/zero > '" + tmp + "'"; },
            1'000'000);
        return path;
    }

    std::string dir_;
};

TEST_F(FixtureCache, TheLeastRecentlyUsedFileGoesWhenANewOneWouldNotFit) {
    const std::string oldest = leftover("a.safetensors", 300);
    const std::string older = leftover("b.safetensors", 200);
    const std::string recent = leftover("c.safetensors", 100);
    const std::string made = make("d.safetensors");
    EXPECT_FALSE(file_exists(oldest));
    EXPECT_TRUE(file_exists(older));
    EXPECT_TRUE(file_exists(recent));
    EXPECT_TRUE(file_exists(made));
}

TEST_F(FixtureCache, FilesInSubfoldersCount) {
    ::mkdir((dir_ + "/flux").c_str(), 0755);
    const std::string oldest = leftover("flux/a.safetensors", 300);
    leftover("b.safetensors", 200);
    leftover("c.safetensors", 100);
    make("flux/d.gguf");
    EXPECT_FALSE(file_exists(oldest));
    EXPECT_TRUE(file_exists(dir_ + "/flux/d.gguf"));
}

// Files this process was handed are held: the cache runs over its bound rather than remove
// them, and the unheld one goes first whatever its age.
TEST_F(FixtureCache, AHeldFileIsNeverRemoved) {
    const std::string first = make("a.safetensors");
    const std::string second = make("b.safetensors");
    const std::string unheld = leftover("c.safetensors", 0);
    const std::string third = make("d.safetensors");
    const std::string fourth = make("e.safetensors");
    EXPECT_TRUE(file_exists(first));
    EXPECT_TRUE(file_exists(second));
    EXPECT_FALSE(file_exists(unheld));
    EXPECT_TRUE(file_exists(third));
    EXPECT_TRUE(file_exists(fourth));
}

TEST_F(FixtureCache, AFileThereIsNotMadeAgain) {
    const std::string path = make("a.safetensors");
    std::ofstream(path) << "kept";
    make("a.safetensors");
    std::ifstream in(path);
    std::string text;
    in >> text;
    EXPECT_EQ(text, "kept");
}

TEST_F(FixtureCache, AFailedCommandLeavesNoFileAndNamesIt) {
    const std::string path = dir_ + "/broken.safetensors";
    try {
        make_once(
            path, [](const std::string& tmp) { return "echo partial > '" + tmp + "'; false"; }, 10);
        ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("broken.safetensors"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(file_exists(path));
    EXPECT_FALSE(file_exists(dir_ + "/broken.tmp.safetensors"));
}

}  // namespace
}  // namespace sd::test
