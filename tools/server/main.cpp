// sd-server: loads the model the command line names, then answers the OpenAI, AUTOMATIC1111
// and native APIs and serves the web page until SIGINT or SIGTERM, which stop it cleanly:
// queued jobs are cancelled, the running generation is interrupted, open requests are
// answered, the model is released.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "cli_checks.h"
#include "cli_options.h"
#include "http_json.h"
#include "http_server.h"
#include "job_queue.h"
#include "log_output.h"
#include "model_runner.h"
#include "queue_setup.h"
#include "routes.h"
#include "server_log.h"
#include "server_options.h"
#include "server_state.h"

namespace {

std::string version_string() {
    return std::string("sd-server (stable-diffusion engine) version ") + sd_version() +
           ", commit " + sd_commit();
}

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw cli::UsageError("--serve-html-path: cannot read '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Reads --prompt-file / --negative-prompt-file once, at start.
void settle_default_prompts(cli::CliParams& params) {
    if (params.prompt_file.empty() && params.negative_prompt_file.empty()) return;
    cli::CliParams copy = params;
    copy.lora_model_dir.clear();
    const cli::GenerationRequest r = cli::resolve_request(copy);
    params.prompt = r.prompt;
    params.negative_prompt = r.negative_prompt;
    params.prompt_file.clear();
    params.negative_prompt_file.clear();
}

server::HttpLimits http_limits(const server::ServerConfig& c) {
    server::HttpLimits limits;
    limits.read_timeout_ms = c.http_read_timeout_seconds * 1000;
    limits.write_timeout_ms = std::max(10, c.http_read_timeout_seconds) * 1000;
    limits.max_per_client = c.max_client_connections;
    limits.max_connections = server::http_threads_for(c);
    return limits;
}

// Cancellation reaches every phase of a generation within about 2 s; should anything still
// hold the stop up (an upscale of /sdapi/v1/extra-single-image, which has no cancel), the
// process ends anyway, so that a SIGTERM always ends it within 3 s.
class StopDeadline {
  public:
    StopDeadline()
        : thread_([this] {
              std::unique_lock<std::mutex> lock(mutex_);
              if (cv_.wait_for(lock, std::chrono::milliseconds(2700), [this] { return done_; }))
                  return;
              cli::log_error("stopping took longer than 2.7 s: exiting now");
              std::_Exit(1);
          }) {}
    ~StopDeadline() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

// --role worker: no HTTP, jobs from Redis until a signal.
int run_worker(server::QueueSetup& queues, const sigset_t& stop_signals) {
    queues.start();
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    cli::log_info("signal %d: stopping", signal_number);
    queues.stop();
    cli::log_info("stopped");
    return 0;
}

// Binds the HTTP port (0: any free one, written back into `port`), with the listen backlog
// raised; false after saying why.
bool bind_port(server::GuardedServer& svr, const std::string& ip, int& port) {
    int listen_fd = -1;
    svr.set_socket_options([&listen_fd](socket_t sock) {
        httplib::default_socket_options(sock);
        listen_fd = sock;
    });
    const int asked = port;
    errno = 0;
    const bool bound =
        port == 0 ? (port = svr.bind_to_any_port(ip)) > 0 : svr.bind_to_port(ip, port);
    if (!bound) {
        const int why = errno;
        cli::log_error("cannot listen on %s:%d: %s", ip.c_str(), asked,
                       why ? std::strerror(why) : "the address cannot be bound");
        return false;
    }
    // Debian's cpp-httplib listens with a backlog of 5: a burst of clients would see their
    // connections dropped and retried a second later. Listening again raises it.
    if (listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);
    return true;
}

int serve(server::ServerConfig config, cli::CliParams params, const sigset_t& stop_signals) {
    // The port before the model: a taken port is said at once, not after minutes of loading.
    const bool http = server::QueueSetup::serves_http(config);
    std::unique_ptr<server::GuardedServer> svr;
    int port = config.listen_port;
    if (http) {
        svr = std::make_unique<server::GuardedServer>(http_limits(config));
        if (!bind_port(*svr, config.listen_ip, port)) return 1;
    }
    std::unique_ptr<server::ModelRunner> runner;
    if (server::QueueSetup::runs_model(config)) {
        runner = server::ModelRunner::load(params);
        if (!runner) {
            cli::log_error("cannot load the model; see the messages above");
            return 1;
        }
    }
    server::QueueSetup queues(config, params, runner.get());
    if (!http) return run_worker(queues, stop_signals);
    server::ServerState state(config, params, queues.queue());
    // An API node without the model cannot check a LoRA; its worker does at job time.
    state.check_lora = [&runner](const std::string& path) {
        if (runner) runner->check_lora(path);
    };
    state.ref_images = runner && runner->takes_ref_images();
    if (runner) state.makes_video = runner->makes_video();
    if (!config.serve_html_path.empty()) state.index_html = read_text_file(config.serve_html_path);
    server::register_routes(*svr, state);
    queues.start();
    cli::log_info("listening on http://%s:%d", config.listen_ip.c_str(), port);
    std::thread http_thread([&] {
        svr->listen_after_bind();
        if (!state.stopping) ::kill(::getpid(), SIGTERM);  // the listener failed: stop too
    });
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    cli::log_info("signal %d: stopping", signal_number);
    const StopDeadline deadline;
    state.stopping = true;
    svr->begin_stop();  // idle and half-read connections end at once
    queues.stop();      // answers every waiting request before the HTTP threads are joined
    svr->stop();
    http_thread.join();
    runner.reset();
    cli::log_info("stopped");
    return 0;
}

}  // namespace

int main(int argc, const char* argv[]) {
    // glibc gives threads that meet on a lock an arena of their own (up to 8 per core), and
    // an arena keeps the free pages of its live small blocks: a burst of HTTP threads left
    // the server MiBs above its idle RSS. Two arenas serve its threads (the model's buffers
    // come from the library's allocator, not from malloc's small blocks).
    mallopt(M_ARENA_MAX, 2);
    if (argc > 1 && std::string(argv[1]) == "--version") {
        std::cout << version_string() << "\n";
        return 0;
    }
    server::ServerConfig config;
    cli::CliParams params;
    try {
        server::parse_server_command_line(argc, argv, config, params);
        if (config.help) {
            std::cout << version_string() << "\n";
            server::print_server_help(std::cout, argv[0]);
            return 0;
        }
        server::check_server_config(config);
        cli::check_params(params);
        cli::refuse_not_built(params);
        settle_default_prompts(params);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    cli::set_log_settings({params.verbose, params.color});
    server::install_server_log();
    cli::log_debug("%s", version_string().c_str());
    // Every thread started from here on leaves SIGINT/SIGTERM to sigwait() in serve().
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not end the server
    try {
        return serve(config, params, stop_signals);
    } catch (const std::exception& e) {
        cli::log_error("%s", e.what());
        return 1;
    }
}
