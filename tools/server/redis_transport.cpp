#include "redis_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "redis_tls.h"

namespace server {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(int code) {
    return std::strerror(code);
}

int milliseconds_left(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

// A non-blocking TCP connection to host:port, trying each address until `deadline`.
int connect_tcp(const RedisEndpoint& endpoint, Clock::time_point deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(endpoint.port);
    const int rc = getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0) throw RedisError("cannot resolve '" + endpoint.host + "': " + gai_strerror(rc));
    std::string last_error = "no address";
    int fd = -1;
    for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last_error = errno_text(errno);
            continue;
        }
        int error = 0;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            error = errno;
            if (error == EINPROGRESS) {
                pollfd p{fd, POLLOUT, 0};
                const int ready = ::poll(&p, 1, milliseconds_left(deadline));
                socklen_t len = sizeof(error);
                if (ready <= 0)
                    error = ready == 0 ? ETIMEDOUT : errno;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
                    error = errno;
            }
        }
        if (error != 0) {
            last_error = errno_text(error);
            ::close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0) throw RedisError("cannot connect: " + last_error);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    return fd;
}

// Why a TLS read or write failed: OpenSSL's error, else the socket's. A server that refuses
// the client's certificate says so in an alert after the handshake (TLS 1.3): a write that
// fails reads once more to learn it.
std::string tls_failure(ssl_st* ssl, int rc, bool writing) {
    const int saved_errno = errno;
    const int error = SSL_get_error(ssl, rc);
    std::string detail = take_openssl_error();
    if (detail.empty() && writing) {
        char byte = 0;
        SSL_read(ssl, &byte, 1);
        detail = take_openssl_error();
    }
    if (detail.empty() && error == SSL_ERROR_SYSCALL)
        detail = saved_errno ? errno_text(saved_errno) : "the server closed the connection";
    return std::string("TLS ") + (writing ? "write" : "read") +
           " failed: " + (detail.empty() ? "error " + std::to_string(error) : detail);
}

bool is_ip_literal(const std::string& host) {
    unsigned char buffer[sizeof(in6_addr)];
    return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
           inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

}  // namespace

RedisTransport::RedisTransport(const RedisEndpoint& endpoint, std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    fd_ = connect_tcp(endpoint, deadline);
    if (!endpoint.tls) return;
    try {
        handshake(endpoint, deadline);
    } catch (...) {
        if (ssl_) SSL_free(ssl_);
        ::close(fd_);
        throw;
    }
}

RedisTransport::~RedisTransport() {
    if (ssl_) SSL_free(ssl_);  // no close_notify: Redis does not wait for one
    if (fd_ >= 0) ::close(fd_);
}

bool RedisTransport::wait_for(short events, Clock::time_point deadline) const {
    for (;;) {
        pollfd p{fd_, events, 0};
        const int ready = ::poll(&p, 1, milliseconds_left(deadline));
        if (ready > 0) return true;
        if (ready == 0) return false;
        if (errno != EINTR) throw RedisError("poll: " + errno_text(errno));
    }
}

// The TLS handshake: the certificate must chain to the CA and name the URL's host.
void RedisTransport::handshake(const RedisEndpoint& endpoint, Clock::time_point deadline) {
    if (!endpoint.tls_context) throw RedisError("rediss:// without a TLS context");
    ERR_clear_error();
    ssl_ = SSL_new(endpoint.tls_context->get());
    if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1)
        throw RedisError("TLS: cannot start: " + take_openssl_error());
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    if (is_ip_literal(endpoint.host)) {
        X509_VERIFY_PARAM_set1_ip_asc(param, endpoint.host.c_str());
    } else {
        SSL_set_tlsext_host_name(ssl_, endpoint.host.c_str());
        SSL_set1_host(ssl_, endpoint.host.c_str());
    }
    for (;;) {
        const int rc = SSL_connect(ssl_);
        if (rc == 1) return;
        const int error = SSL_get_error(ssl_, rc);
        if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
            if (!wait_for(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline))
                throw RedisError("TLS handshake timed out");
            continue;
        }
        const long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK)
            throw RedisError(std::string("TLS: the server's certificate is not trusted: ") +
                             X509_verify_cert_error_string(verify));
        const std::string detail = take_openssl_error();
        throw RedisError("TLS handshake failed" +
                         (detail.empty() ? std::string(" (is it a TLS port?)") : ": " + detail));
    }
}

void RedisTransport::write_all(std::string_view bytes, std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (!bytes.empty()) {
        const int chunk = static_cast<int>(std::min<size_t>(bytes.size(), 1 << 30));
        short want = POLLOUT;
        if (ssl_) {
            ERR_clear_error();
            errno = 0;
            const int n = SSL_write(ssl_, bytes.data(), chunk);
            if (n > 0) {
                bytes.remove_prefix(static_cast<size_t>(n));
                continue;
            }
            const int error = SSL_get_error(ssl_, n);
            if (error == SSL_ERROR_WANT_READ)
                want = POLLIN;
            else if (error != SSL_ERROR_WANT_WRITE)
                throw RedisError(tls_failure(ssl_, n, true));
        } else {
            const ssize_t n = ::send(fd_, bytes.data(), static_cast<size_t>(chunk), MSG_NOSIGNAL);
            if (n > 0) {
                bytes.remove_prefix(static_cast<size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                throw RedisError("send: " + errno_text(errno));
        }
        if (!wait_for(want, deadline)) throw RedisError("send timed out");
    }
}

size_t RedisTransport::read_some(char* buffer, size_t size, std::chrono::milliseconds wait) {
    const Clock::time_point deadline = Clock::now() + wait;
    const int chunk = static_cast<int>(std::min<size_t>(size, 1 << 30));
    for (;;) {
        short want = POLLIN;
        if (ssl_) {
            ERR_clear_error();
            errno = 0;
            const int n = SSL_read(ssl_, buffer, chunk);
            if (n > 0) return static_cast<size_t>(n);
            const int error = SSL_get_error(ssl_, n);
            if (error == SSL_ERROR_WANT_WRITE)
                want = POLLOUT;
            else if (error == SSL_ERROR_ZERO_RETURN)
                throw RedisError("the server closed the connection");
            else if (error != SSL_ERROR_WANT_READ)
                throw RedisError(tls_failure(ssl_, n, false));
        } else {
            const ssize_t n = ::recv(fd_, buffer, static_cast<size_t>(chunk), 0);
            if (n > 0) return static_cast<size_t>(n);
            if (n == 0) throw RedisError("the server closed the connection");
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                throw RedisError("recv: " + errno_text(errno));
        }
        if (!wait_for(want, deadline)) return 0;
    }
}

}  // namespace server
