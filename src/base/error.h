// The one error type of the engine. Every failure on bad input (a file, a shape, a flag)
// throws sd::Error with a message that names what is wrong; the C API and the programs
// catch it at their boundary, so no exception ever crosses into C code.
#pragma once

#include <stdexcept>
#include <string>

#include "base/strfmt.h"

namespace sd {

class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws sd::Error with a printf-style message.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace sd

// SD_CHECK(cond, fmt, ...): throws sd::Error with the message when cond is false.
#define SD_CHECK(cond, ...)          \
    do {                             \
        if (!(cond)) [[unlikely]]    \
            ::sd::fail(__VA_ARGS__); \
    } while (0)
