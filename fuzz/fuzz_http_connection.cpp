// sd-server's HTTP connection loop on arbitrary bytes: what a client sends on one connection
// (any number of requests, keep-alive, bodies with Content-Length or chunked, multipart forms,
// bytes cut anywhere) goes through GuardedServer's connection loop (its reads, deadlines and
// body rule), cpp-httplib's request parser and every route of the server, the in-process job
// queue running an instant stand-in model. Input: the bytes, written to one end of a socket
// pair (then half-closed) while the server serves the other. Findings: a crash or sanitizer
// report; an answer that is not a well-formed sequence of HTTP/1.1 responses; a 500, which
// names an exception no route expected (the stand-in model never fails).
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "fuzz_server_util.h"
#include "http_server.h"
#include "job_queue.h"
#include "routes.h"
#include "server_state.h"

namespace {

// A 1x1 PNG, base64: every image the stand-in model makes.
constexpr const char* kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

class InstantRunner : public server::JobRunner {
  public:
    server::RunOutcome run(server::JobSpec& spec, const server::RunHooks& hooks) override {
        hooks.on_step(1, 1);
        server::RunOutcome out;
        out.ok = true;
        for (int i = 0; i < std::max(1, spec.params.batch_count); ++i)
            out.images.push_back({kPng, spec.request.seed + i, "stand-in", 1, 1, 0});
        return out;
    }
    void interrupt() override {}
};

struct Server {
    InstantRunner runner;
    server::JobQueue queue{runner, server::QueueSettings{64, 1}};
    std::unique_ptr<server::ServerState> state;
    std::unique_ptr<server::GuardedServer> http;

    Server() {
        const cli::CliParams& params = sd::fuzz::server_command_line();
        server::ServerConfig config;
        config.max_body_bytes = size_t{1} << 20;
        config.limits.max_side = 256;  // images in requests are decoded: keep them small
        state = std::make_unique<server::ServerState>(config, params, queue);
        state->check_lora = [](const std::string&) {};
        state->ref_images = true;
        state->makes_video = true;
        server::HttpLimits limits;
        limits.read_timeout_ms = 100;  // bytes cut short end in 0.1 s, not 5
        limits.keep_alive_ms = 100;
        limits.max_connections = 4;
        http = std::make_unique<server::GuardedServer>(limits);
        server::register_routes(*http, *state);
        queue.start();
    }
};

Server& the_server() {
    static Server* s = new Server();  // never destroyed: the queue's thread outlives main's
    return *s;
}

[[noreturn]] void finding(const std::string& what, const std::string& answer) {
    std::fprintf(stderr, "FUZZ FINDING: %s\n--- answer ---\n%.2000s\n", what.c_str(),
                 answer.c_str());
    std::abort();
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Checks that `answer` is whole HTTP/1.1 responses one after another, none of them a 500.
void check_answer(const std::string& answer) {
    size_t at = 0;
    while (at < answer.size()) {
        if (answer.compare(at, 9, "HTTP/1.1 ") != 0) finding("not a status line", answer);
        const int status = std::atoi(answer.c_str() + at + 9);
        const size_t head_end = answer.find("\r\n\r\n", at);
        if (head_end == std::string::npos) finding("a response head without its end", answer);
        const std::string head = lower(answer.substr(at, head_end - at));
        size_t body = head_end + 4;
        const size_t length_at = head.find("\r\ncontent-length:");
        // The answer to a HEAD request has its headers only (no reply body starts so).
        const bool head_only = body == answer.size() || answer.compare(body, 9, "HTTP/1.1 ") == 0;
        if (head_only) {
            // nothing follows its headers
        } else if (length_at != std::string::npos) {
            body += std::strtoull(head.c_str() + length_at + 17, nullptr, 10);
        } else if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
            for (;;) {
                const size_t line_end = answer.find("\r\n", body);
                if (line_end == std::string::npos) finding("a chunk without its size", answer);
                const size_t size = std::strtoull(answer.c_str() + body, nullptr, 16);
                body = line_end + 2 + size + 2;
                if (size == 0) break;
            }
        }
        if (body > answer.size()) finding("a response body cut short", answer);
        if (status == 500)
            finding("a 500 (an exception no route expected)", answer.substr(at, body - at));
        if (status < 100 || status > 599) finding("a bad status", answer);
        static const bool verbose = std::getenv("SD_FUZZ_VERBOSE") != nullptr;
        if (verbose)
            std::fprintf(stderr, "%d %.*s\n", status,
                         static_cast<int>(std::min<size_t>(body - head_end - 4, 160)),
                         answer.c_str() + head_end + 4);
        at = body;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Server& s = the_server();
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        std::perror("socketpair");
        std::abort();
    }
    std::string answer;
    std::thread client([&] {
        for (size_t done = 0; done < size;) {
            const ssize_t n = ::send(fds[0], data + done, size - done, MSG_NOSIGNAL);
            if (n <= 0) break;  // the server closed early: the rest is not read
            done += static_cast<size_t>(n);
        }
        ::shutdown(fds[0], SHUT_WR);
        char buffer[16384];
        for (ssize_t n; (n = ::recv(fds[0], buffer, sizeof buffer, 0)) > 0;)
            answer.append(buffer, static_cast<size_t>(n));
    });
    s.http->serve_connection(fds[1]);  // closes fds[1]
    client.join();
    ::close(fds[0]);
    check_answer(answer);
    return 0;
}
