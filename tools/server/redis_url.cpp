#include "redis_url.h"

#include <charconv>
#include <stdexcept>

namespace server {
namespace {

int number(const std::string& text, const char* what, int min, int max) {
    int out = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || out < min ||
        out > max)
        throw std::invalid_argument(std::string(what) + " '" + text + "' is not a number in " +
                                    std::to_string(min) + ".." + std::to_string(max));
    return out;
}

// %XX escapes of the user name and password (a password may hold '@' or ':').
std::string unescape(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%') {
            if (i + 2 >= text.size())
                throw std::invalid_argument("bad %-escape in the credentials");
            int value = 0;
            auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
            if (ec != std::errc() || end != text.data() + i + 3)
                throw std::invalid_argument("bad %-escape in the credentials");
            out += static_cast<char>(value);
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

}  // namespace

std::string RedisEndpoint::display() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/" + std::to_string(db) +
           (tls ? " over TLS" : "");
}

RedisEndpoint parse_redis_url(const std::string& url) {
    RedisEndpoint ep;
    std::string rest;
    if (url.rfind("redis://", 0) == 0) {
        rest = url.substr(8);
    } else if (url.rfind("rediss://", 0) == 0) {
        rest = url.substr(9);
        ep.tls = true;
    } else {
        throw std::invalid_argument("expected redis[s]://[user:password@]HOST:PORT[/DB], got '" +
                                    url + "'");
    }
    const size_t at = rest.rfind('@');
    if (at != std::string::npos) {
        const std::string credentials = rest.substr(0, at);
        rest = rest.substr(at + 1);
        const size_t colon = credentials.find(':');
        if (colon == std::string::npos) {
            ep.password = unescape(credentials);  // redis://password@host
        } else {
            ep.user = unescape(credentials.substr(0, colon));
            ep.password = unescape(credentials.substr(colon + 1));
        }
    }
    const size_t slash = rest.find('/');
    if (slash != std::string::npos) {
        const std::string db = rest.substr(slash + 1);
        if (!db.empty()) ep.db = number(db, "the database", 0, 1 << 20);
        rest = rest.substr(0, slash);
    }
    std::string port;
    bool has_port = false;
    if (!rest.empty() && rest[0] == '[') {  // [IPv6]:PORT
        const size_t close = rest.find(']');
        if (close == std::string::npos) throw std::invalid_argument("unclosed '[' in the host");
        ep.host = rest.substr(1, close - 1);
        if (close + 1 < rest.size()) {
            if (rest[close + 1] != ':') throw std::invalid_argument("expected ':' after ']'");
            has_port = true;
            port = rest.substr(close + 2);
        }
    } else {
        const size_t colon = rest.rfind(':');
        ep.host = rest.substr(0, colon);
        if (colon != std::string::npos) {
            has_port = true;
            port = rest.substr(colon + 1);
        }
    }
    if (ep.host.empty()) throw std::invalid_argument("the host is missing in '" + url + "'");
    if (has_port) ep.port = number(port, "the port", 1, 65535);
    return ep;
}

}  // namespace server
