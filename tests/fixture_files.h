// Generated fixture checkpoints for tests: ../shared/fixtures/mkckpt.py run once per
// (manifest, dtype, seed) into the build's fixture cache, shared by every test process.
// Generation is serialised with a lock file, so tests running in parallel wait for one
// writer instead of racing.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "test_util.h"

namespace sd::test {

inline std::string fixture_cache_dir() {
    const char* env = std::getenv("SD_FIXTURE_CACHE");
    std::string dir = env ? env : SD_FIXTURE_CACHE_DIR;
    ::mkdir(dir.c_str(), 0755);
    return dir;
}

inline bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Runs a shell command, failing with its text when it does not succeed.
inline void run_or_fail(const std::string& command) {
    int rc = std::system(command.c_str());
    if (rc != 0) fail("command failed (%d): %s", rc, command.c_str());
}

// Path of `manifest` (e.g. "sd15") generated as `dtype` with `seed`, e.g.
// fixture_cache/sd15_f16_seed1.safetensors (the name the fixtures README uses).
// When `cache` is false the file goes to the test's temp folder; the caller removes it.
inline std::string generated_checkpoint(const std::string& manifest, const std::string& dtype,
                                        int seed, bool cache = true) {
    std::string name = manifest + "_" + dtype + "_seed" + std::to_string(seed) + ".safetensors";
    std::string dir = cache ? fixture_cache_dir() : testing::TempDir();
    std::string path = dir + "/" + name;
    std::string lock_path = fixture_cache_dir() + "/.generate.lock";
    int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
    if (lock < 0) fail("cannot create %s", lock_path.c_str());
    ::flock(lock, LOCK_EX);
    try {
        if (!file_exists(path)) {
            std::string fx = fixtures_dir();
            std::string tmp = path + ".tmp";
            run_or_fail("/usr/bin/python3 " + fx + "/mkckpt.py " + fx + "/manifests/" + manifest +
                        ".tsv " + tmp + " --dtype " + dtype + " --seed " + std::to_string(seed) +
                        " 2>/dev/null || { echo 'mkckpt.py failed: is python3-numpy installed? "
                        "(scripts/install-deps.sh)' >&2; exit 1; }");
            if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename %s", tmp.c_str());
        }
    } catch (...) {
        ::flock(lock, LOCK_UN);
        ::close(lock);
        throw;
    }
    ::flock(lock, LOCK_UN);
    ::close(lock);
    return path;
}

inline std::string tests_source_dir() {
    return SD_TESTS_SOURCE_DIR;
}

}  // namespace sd::test
