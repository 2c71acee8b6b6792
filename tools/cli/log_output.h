// The program's log: the library's messages (through sd_set_log_callback) and its own,
// as "[LEVEL] text" lines; errors on stderr, the rest on stdout; debug only with -v.
#pragma once

#include "stable-diffusion.h"

namespace cli {

struct LogSettings {
    bool verbose = false;
    bool color = false;
};

void set_log_settings(const LogSettings& settings);
// Routes the library's log through this program's printer.
void install_library_log();
void print_log(sd_log_level_t level, const char* text);

void log_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace cli
