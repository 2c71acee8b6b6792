// Shared by the Redis queue tests: a free loopback port, a redis-server of the test's own
// (no persistence) and a stand-in for the model that counts its runs.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redis_client.h"
#include "worker_loop.h"

extern char** environ;

namespace server::test {

using namespace std::chrono_literals;

inline int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

inline RedisEndpoint loopback(int port) {
    RedisEndpoint e;
    e.host = "127.0.0.1";
    e.port = port;
    return e;
}

// redis-server on 127.0.0.1 with `extra` arguments after the defaults; its pid once
// `probe` connects, -1 otherwise.
inline pid_t spawn_redis_with(const std::vector<std::string>& extra, const RedisEndpoint& probe) {
    std::vector<std::string> args = {"redis-server", "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "no"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    posix_spawn_file_actions_t quiet;  // its log is not the test's
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    const int spawned = posix_spawnp(&pid, "redis-server", &quiet, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&quiet);
    if (spawned != 0) return -1;
    for (int i = 0; i < 200; ++i) {
        try {
            RedisClient(probe, 1s).connect_now();
            return pid;
        } catch (const std::exception&) {
            std::this_thread::sleep_for(50ms);
        }
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
}

// A plain redis-server on 127.0.0.1:port.
inline pid_t spawn_redis(int port, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--port", std::to_string(port)});
    return spawn_redis_with(extra, loopback(port));
}

inline void stop_redis(pid_t pid) {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
}

// A redis-server of the test's own on a free port whose files live in a fresh temporary
// folder, so that it can be stopped and started again on its data; stopped and the folder
// removed whatever the test's outcome. `pid` is -1 where it did not start.
struct RedisWithFiles {
    explicit RedisWithFiles(std::vector<std::string> options) {
        char dir_template[] = "/tmp/sd-redis-XXXXXX";
        if (::mkdtemp(dir_template) == nullptr) return;
        dir = dir_template;
        files = {"--dir", dir.string()};
        files.insert(files.end(), options.begin(), options.end());
        pid = spawn_redis(port, files);
    }
    ~RedisWithFiles() {
        stop_redis(pid);
        if (!dir.empty()) std::filesystem::remove_all(dir);
    }
    RedisWithFiles(const RedisWithFiles&) = delete;
    RedisWithFiles& operator=(const RedisWithFiles&) = delete;

    void stop() {
        stop_redis(pid);
        pid = -1;
    }
    // Starts it again on its files, with `extra` options after its own.
    void restart(const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args = files;
        args.insert(args.end(), extra.begin(), extra.end());
        pid = spawn_redis(port, args);
    }
    RedisEndpoint endpoint() const { return loopback(port); }

    int port = free_port();
    std::filesystem::path dir;
    std::vector<std::string> files;  // --dir and the options
    pid_t pid = -1;
};

// Counts its runs; while `hold` is set a run waits (for release or a cancel). Each run
// makes one image whose base64 text is `image_b64`.
class StandInRunner : public JobRunner {
  public:
    RunOutcome run(JobSpec& spec, const RunHooks& hooks) override {
        std::unique_lock<std::mutex> lock(mutex_);
        ++runs;
        cv_.notify_all();
        cv_.wait_for(lock, 20s, [&] { return !hold || hooks.cancelled->load(); });
        lock.unlock();
        hooks.on_step(1, 1);
        RunOutcome out;
        if (hooks.cancelled->load()) return out;
        out.ok = true;
        out.images.push_back({image_b64, spec.request.seed, "Seed: x", 64, 64});
        return out;
    }
    void interrupt() override { cv_.notify_all(); }
    void release() {
        std::lock_guard<std::mutex> lock(mutex_);
        hold = false;
        cv_.notify_all();
    }
    bool wait_runs(int n) {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, 20s, [&] { return runs >= n; });
    }

    int runs = 0;
    bool hold = false;
    std::string image_b64 = "aW1n";

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
};

}  // namespace server::test
