#include "base/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

#include "base/strfmt.h"

namespace sd {
namespace {

std::mutex g_mutex;
LogCallback g_callback = nullptr;
void* g_user = nullptr;
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};

const char* level_tag(LogLevel level) {
    switch (level) {
        case LogLevel::Debug:
            return "DEBUG";
        case LogLevel::Info:
            return "INFO ";
        case LogLevel::Warn:
            return "WARN ";
        case LogLevel::Error:
            return "ERROR";
    }
    return "?";
}

}  // namespace

void set_log_callback(LogCallback callback, void* user) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_callback = callback;
    g_user = user;
}

void set_log_level(LogLevel level) {
    g_level = static_cast<int>(level);
}
LogLevel log_level() {
    return static_cast<LogLevel>(g_level.load());
}

void log_message(LogLevel level, const char* fmt, ...) {
    if (static_cast<int>(level) < g_level.load()) return;
    va_list args;
    va_start(args, fmt);
    std::string text = vstrfmt(fmt, args);
    va_end(args);
    if (text.empty() || text.back() != '\n') text.push_back('\n');

    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_callback) {
        g_callback(level, text.c_str(), g_user);
    } else {
        std::fprintf(stderr, "[%s] %s", level_tag(level), text.c_str());
    }
}

}  // namespace sd
