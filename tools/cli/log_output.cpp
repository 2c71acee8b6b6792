#include "log_output.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

namespace cli {
namespace {

std::mutex g_mutex;
LogSettings g_settings;

void library_log(sd_log_level_t level, const char* text, void*) {
    print_log(level, text);
}

void vlog(sd_log_level_t level, const char* fmt, va_list args) {
    char buffer[4096];
    std::vsnprintf(buffer, sizeof(buffer), fmt, args);
    print_log(level, buffer);
}

}  // namespace

void set_log_settings(const LogSettings& settings) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_settings = settings;
}

void install_library_log() {
    sd_set_log_callback(library_log, nullptr);
}

void print_log(sd_log_level_t level, const char* text) {
    static const char* const tags[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    static const int colors[] = {37, 34, 35, 31};
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!text || (level == SD_LOG_DEBUG && !g_settings.verbose)) return;
    const int index = level >= SD_LOG_DEBUG && level <= SD_LOG_ERROR ? level : SD_LOG_ERROR;
    std::FILE* out = level == SD_LOG_ERROR ? stderr : stdout;
    if (g_settings.color)
        std::fprintf(out, "\033[%d;1m[%-5s]\033[0m ", colors[index], tags[index]);
    else
        std::fprintf(out, "[%-5s] ", tags[index]);
    std::fputs(text, out);
    const size_t n = std::strlen(text);
    if (n == 0 || text[n - 1] != '\n') std::fputc('\n', out);
    std::fflush(out);
}

#define CLI_LOG_FUNCTION(name, level) \
    void name(const char* fmt, ...) { \
        va_list args;                 \
        va_start(args, fmt);          \
        vlog(level, fmt, args);       \
        va_end(args);                 \
    }

CLI_LOG_FUNCTION(log_debug, SD_LOG_DEBUG)
CLI_LOG_FUNCTION(log_info, SD_LOG_INFO)
CLI_LOG_FUNCTION(log_warn, SD_LOG_WARN)
CLI_LOG_FUNCTION(log_error, SD_LOG_ERROR)

}  // namespace cli
