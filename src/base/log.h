// Leveled logging. Messages go to a user callback when one is set (the C API's
// sd_set_log_callback plugs in here), otherwise to stderr.
#pragma once

namespace sd {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

using LogCallback = void (*)(LogLevel level, const char* text, void* user);

// Replaces the sink; nullptr restores the stderr sink.
void set_log_callback(LogCallback callback, void* user);
// Messages below this level are dropped (default Info).
void set_log_level(LogLevel level);
LogLevel log_level();

void log_message(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace sd

#define SD_LOG_DEBUG(...) ::sd::log_message(::sd::LogLevel::Debug, __VA_ARGS__)
#define SD_LOG_INFO(...) ::sd::log_message(::sd::LogLevel::Info, __VA_ARGS__)
#define SD_LOG_WARN(...) ::sd::log_message(::sd::LogLevel::Warn, __VA_ARGS__)
#define SD_LOG_ERROR(...) ::sd::log_message(::sd::LogLevel::Error, __VA_ARGS__)
