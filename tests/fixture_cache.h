// The fixture cache: generated checkpoints (gigabytes each, ~40 GB for the whole suite) made
// once and shared by every test process, and by later runs while the disk has room.
//
// A disk may not hold them all, so the cache is bounded: before it makes a file, make_once
// removes the least recently used files that no running test holds until the disk keeps the new
// file's size plus a headroom free (room for the tests' own temporary files: 10 GB, or
// SD_FIXTURE_HEADROOM_GB), and the cache fits SD_FIXTURE_CACHE_GB when that is set. A file removed
// is made again when a later test asks for it. A test process holds every cache file it was handed
// (a shared flock, kept until it exits); eviction takes an exclusive flock without waiting, so a
// file in use is never removed. Handing out and evicting both happen under the cache's lock file,
// so they cannot interleave.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"

namespace sd::test {

// `name`, a number of GB (10^9 bytes) in the environment, or `fallback`.
inline uint64_t gigabytes_from_env(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? uint64_t(std::atof(v) * 1e9) : fallback;
}

// Free space kept beside a new fixture: two parallel tests' temporary files (a 4 GB GGUF
// conversion each) and what the suite writes besides.
inline uint64_t headroom_bytes() {
    return gigabytes_from_env("SD_FIXTURE_HEADROOM_GB", 10'000'000'000);
}

inline std::string fixture_cache_dir() {
    const char* env = std::getenv("SD_FIXTURE_CACHE");
    std::string dir = env && *env ? env : SD_FIXTURE_CACHE_DIR;  // set but empty: the default
    ::mkdir(dir.c_str(), 0755);
    return dir;
}

inline bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Free space of the file system holding `dir`, in bytes.
inline uint64_t free_bytes(const std::string& dir) {
    struct statvfs fs {};
    if (::statvfs(dir.c_str(), &fs) != 0) return 0;
    return uint64_t(fs.f_bavail) * uint64_t(fs.f_frsize);
}

inline uint64_t file_bytes(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

inline double free_gigabytes(const std::string& dir) {
    return double(free_bytes(dir)) / 1e9;
}

struct CachedFile {
    std::string path;
    uint64_t bytes = 0;
    int64_t last_used = 0;  // mtime: set each time a test is handed the file
};

// Every regular file under `dir` but the lock file.
inline void list_cached_files(const std::string& dir, std::vector<CachedFile>& out) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == ".." || name == ".generate.lock") continue;
        const std::string path = dir + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) list_cached_files(path, out);
        if (S_ISREG(st.st_mode))
            out.push_back({path, uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec)});
    }
    ::closedir(d);
}

// Marks `path` as used by this process until it exits: a shared flock on an open descriptor
// (never closed), and its mtime set to now for the least-recently-used order.
inline void hold_cached_file(const std::string& path) {
    static std::set<std::string> held;
    if (!held.insert(path).second) return;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open %s", path.c_str());
    ::flock(fd, LOCK_SH);
    ::futimens(fd, nullptr);
}

// Removes least recently used, unheld files until `incoming` bytes fit as the header says.
// Called with the cache's lock held.
inline void make_room(uint64_t incoming) {
    const std::string dir = fixture_cache_dir();
    std::vector<CachedFile> files;
    list_cached_files(dir, files);
    uint64_t cached = 0;
    for (const CachedFile& f : files) cached += f.bytes;
    const uint64_t cap = gigabytes_from_env("SD_FIXTURE_CACHE_GB", UINT64_MAX);
    const uint64_t headroom = headroom_bytes();
    std::sort(files.begin(), files.end(),
              [](const CachedFile& a, const CachedFile& b) { return a.last_used < b.last_used; });
    uint64_t free = free_bytes(dir);
    for (const CachedFile& f : files) {
        const bool disk_ok = free >= incoming + headroom;
        const bool cap_ok = cap == UINT64_MAX || cached + incoming <= cap;
        if (disk_ok && cap_ok) return;
        const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(f.path.c_str()) == 0) {
            std::fprintf(stderr, "fixture cache: removed %s (%.1f GB, least recently used)\n",
                         f.path.c_str(), double(f.bytes) / 1e9);
            free += f.bytes;
            cached -= f.bytes;
        }
        ::close(fd);
    }
}

// Runs the shell command `command(tmp)`, which writes `tmp` (beside `path`, about `bytes`
// long), and renames tmp to `path`, unless `path` is there; then holds `path` for this process
// when it is in the cache (a file elsewhere is the caller's to remove).
// Holds the cache's lock throughout, so tests running in parallel wait for one writer.
inline void make_once(const std::string& path,
                      const std::function<std::string(const std::string& tmp)>& command,
                      uint64_t bytes) {
    std::string lock_path = fixture_cache_dir() + "/.generate.lock";
    int lock = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock < 0) fail("cannot create %s", lock_path.c_str());
    ::flock(lock, LOCK_EX);
    try {
        const bool in_cache = path.rfind(fixture_cache_dir() + "/", 0) == 0;
        if (!file_exists(path)) {
            if (in_cache) make_room(bytes);
            // NAME.tmp.EXT: the extension stays last (a converter picks its format by it).
            const size_t dot = path.rfind('.');
            const bool has_ext =
                dot != std::string::npos && path.find('/', dot) == std::string::npos;
            std::string tmp =
                has_ext ? path.substr(0, dot) + ".tmp" + path.substr(dot) : path + ".tmp";
            if (std::system(command(tmp).c_str()) != 0) {
                // A half-written file would hold the disk and be taken for nothing by the next
                // run; it goes, and the message says what space is left.
                std::remove(tmp.c_str());
                fail("could not make %s (%.1f GB free in %s): %s", path.c_str(),
                     free_gigabytes(fixture_cache_dir()), fixture_cache_dir().c_str(),
                     command(tmp).c_str());
            }
            if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename %s", tmp.c_str());
        }
        if (in_cache) hold_cached_file(path);
    } catch (...) {
        ::flock(lock, LOCK_UN);
        ::close(lock);
        throw;
    }
    ::flock(lock, LOCK_UN);
    ::close(lock);
}

}  // namespace sd::test
