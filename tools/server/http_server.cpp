#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "http_json.h"

namespace server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSliceMs = 50;                // how often a wait looks at the stop flag
constexpr size_t kMaxHeadBytes = 64 << 10;  // the library refuses far less; this bounds ours
const std::atomic<bool> kNeverStop{false};

Clock::time_point after_ms(int ms) {
    return Clock::now() + std::chrono::milliseconds(ms);
}

// Waits until `sock` is ready for `events` (or hung up); false when `deadline` passes first,
// `stopping` is set or poll fails.
bool wait_socket(int sock, short events, Clock::time_point deadline,
                 const std::atomic<bool>& stopping) {
    for (;;) {
        if (stopping) return false;
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{sock, events, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left, 0, kSliceMs)));
        if (r > 0) return true;
        if (r < 0 && errno != EINTR) return false;
        if (left <= 0) return false;
    }
}

std::string address_of(const sockaddr_storage& a) {
    char text[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
    else if (a.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text,
                    sizeof text);
    return text;
}

int port_of(const sockaddr_storage& a) {
    if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
    if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
    return 0;
}

// One connection's reads and writes, with the deadlines and the body rule of http_server.h.
class GuardedStream : public httplib::Stream {
  public:
    GuardedStream(socket_t sock, const HttpLimits& limits, const std::atomic<bool>& stopping)
        : sock_(sock), limits_(limits), stopping_(stopping) {}

    // Whether a request starts within `ms` (bytes already buffered count).
    bool wait_for_request(int ms) const {
        return pos_ < len_ || wait_socket(sock_, POLLIN, after_ms(ms), stopping_);
    }
    // The next request's head must arrive within the read timeout from now.
    void begin_request() {
        part_ = Part::Head;
        head_.clear();
        head_deadline_ = after_ms(limits_.read_timeout_ms);
    }

    bool is_readable() const override {
        return pos_ < len_ ||
               wait_socket(sock_, POLLIN, after_ms(limits_.read_timeout_ms), stopping_);
    }
    bool is_writable() const override {
        return wait_socket(sock_, POLLOUT, after_ms(limits_.write_timeout_ms), kNeverStop);
    }

    ssize_t read(char* ptr, size_t size) override {
        if (size == 0 || part_ == Part::NoBody) return 0;
        if (pos_ == len_) {
            const Clock::time_point deadline =
                part_ == Part::Head ? head_deadline_ : after_ms(limits_.read_timeout_ms);
            if (!wait_socket(sock_, POLLIN, deadline, stopping_)) return -1;
            const ssize_t n = ::recv(sock_, buffer_, sizeof buffer_, 0);
            if (n <= 0) return n == 0 ? 0 : -1;
            pos_ = 0;
            len_ = static_cast<size_t>(n);
        }
        if (part_ == Part::Body) {
            const size_t n = std::min(size, len_ - pos_);
            std::copy(buffer_ + pos_, buffer_ + pos_ + n, ptr);
            pos_ += n;
            return static_cast<ssize_t>(n);
        }
        // The head: byte by byte up to its blank line, so the body rule applies exactly there.
        size_t n = 0;
        while (n < size && pos_ < len_ && part_ == Part::Head) {
            const char c = buffer_[pos_++];
            ptr[n++] = c;
            head_ += c;
            if (head_.size() > kMaxHeadBytes) return -1;
            if (head_.size() >= 2 && c == '\n' &&
                (head_.compare(head_.size() - 2, 2, "\n\n") == 0 ||
                 (head_.size() >= 4 && head_.compare(head_.size() - 4, 4, "\r\n\r\n") == 0)))
                end_of_head();
        }
        return static_cast<ssize_t>(n);
    }

    ssize_t write(const char* ptr, size_t size) override {
        size_t done = 0;
        while (done < size) {
            if (!wait_socket(sock_, POLLOUT, after_ms(limits_.write_timeout_ms), kNeverStop))
                return -1;
            const ssize_t n = ::send(sock_, ptr + done, size - done, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return -1;
            done += static_cast<size_t>(n);
        }
        return static_cast<ssize_t>(size);
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        socket_name(::getpeername, ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        socket_name(::getsockname, ip, port);
    }
    socket_t socket() const override { return sock_; }

    // The client closed (or reset) its end; bytes it sent ahead do not count as closing.
    bool peer_closed() const {
        pollfd p{sock_, static_cast<short>(POLLIN | POLLRDHUP), 0};
        if (::poll(&p, 1, 0) <= 0) return false;
        if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
        char c;
        return ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    }

  private:
    enum class Part { Head, Body, NoBody };

    void socket_name(int (*query)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
        sockaddr_storage a{};
        socklen_t n = sizeof a;
        if (query(sock_, reinterpret_cast<sockaddr*>(&a), &n) != 0) return;
        ip = address_of(a);
        port = port_of(a);
    }

    // Without Content-Length or Transfer-Encoding there is no body to wait for.
    void end_of_head() {
        std::string lower(head_.size(), '\0');
        std::transform(head_.begin(), head_.end(), lower.begin(),
                       [](char c) { return static_cast<char>(std::tolower(c)); });
        const bool body = lower.find("\ncontent-length:") != std::string::npos ||
                          lower.find("\ntransfer-encoding:") != std::string::npos;
        part_ = body ? Part::Body : Part::NoBody;
    }

    socket_t sock_;
    const HttpLimits& limits_;
    const std::atomic<bool>& stopping_;
    char buffer_[16384];
    size_t pos_ = 0, len_ = 0;
    Part part_ = Part::Head;
    std::string head_;
    Clock::time_point head_deadline_;
};

thread_local const GuardedStream* t_connection = nullptr;

// Connection threads made as needed, up to a cap; idle ones wait for the next connection.
class ElasticTaskQueue : public httplib::TaskQueue {
  public:
    explicit ElasticTaskQueue(size_t max_threads) : max_(std::max<size_t>(max_threads, 1)) {}
    ~ElasticTaskQueue() override { shutdown(); }

    void enqueue(std::function<void()> fn) override {
        std::lock_guard<std::mutex> lock(mutex_);
        jobs_.push_back(std::move(fn));
        if (jobs_.size() > idle_ && threads_.size() < max_)
            threads_.emplace_back([this] { work(); });
        else
            cv_.notify_one();
    }

    // Runs what is queued, then joins every thread.
    void shutdown() override {
        std::vector<std::thread> threads;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            threads.swap(threads_);
        }
        cv_.notify_all();
        for (std::thread& t : threads) t.join();
    }

  private:
    void work() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            ++idle_;
            cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
            --idle_;
            if (jobs_.empty()) return;
            std::function<void()> fn = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            fn();
            lock.lock();
        }
    }

    const size_t max_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    std::vector<std::thread> threads_;
    size_t idle_ = 0;
    bool stop_ = false;
};

// A connection over the per-address cap: answered at once, without reading its request.
void refuse(socket_t sock, const std::string& address, int cap) {
    const std::string body =
        dump_json(error_body(503, "too_many_connections",
                             "too many connections from " + address + " (at most " +
                                 std::to_string(cap) + " at once; see --max-client-connections)",
                             ""));
    const std::string response =
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\nRetry-After: 1\r\n\r\n" + body;
    ::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    // Closing with the request unread would reset the connection before the client reads
    // the answer: end our side, then drain what it sent for a moment.
    ::shutdown(sock, SHUT_WR);
    const Clock::time_point until = after_ms(200);
    char sink[4096];
    while (wait_socket(sock, POLLIN, until, kNeverStop) &&
           ::recv(sock, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
}

}  // namespace

GuardedServer::GuardedServer(HttpLimits limits) : limits_(limits) {
    const size_t threads = static_cast<size_t>(limits_.max_connections);
    new_task_queue = [threads] { return new ElasticTaskQueue(threads); };
}

bool GuardedServer::admit(const std::string& address) {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    int& open = clients_[address];
    if (open >= limits_.max_per_client) {
        if (open == 0) clients_.erase(address);
        return false;
    }
    ++open;
    return true;
}

void GuardedServer::leave(const std::string& address) {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    auto it = clients_.find(address);
    if (it != clients_.end() && --it->second <= 0) clients_.erase(it);
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
    GuardedStream stream(sock, limits_, stopping_);
    std::string address;
    int port = 0;
    stream.get_remote_ip_and_port(address, port);
    if (admit(address)) {
        t_connection = &stream;
        // The first request may take the read timeout to start, later ones the keep-alive.
        int wait_ms = limits_.read_timeout_ms;
        for (int left = limits_.max_requests_per_connection; left > 0 && !stopping_; --left) {
            if (!stream.wait_for_request(wait_ms)) break;
            stream.begin_request();
            bool closed = false;
            if (!process_request(stream, left == 1 || stopping_, closed, {}) || closed) break;
            wait_ms = limits_.keep_alive_ms;
        }
        t_connection = nullptr;
        leave(address);
    } else {
        refuse(sock, address, limits_.max_per_client);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return true;
}

bool client_disconnected() {
    return t_connection && t_connection->peer_closed();
}

}  // namespace server
