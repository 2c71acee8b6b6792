// printf-style formatting into a std::string (GCC 12 has no std::format).
#pragma once

#include <cstdarg>
#include <string>

namespace sd {

std::string strfmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vstrfmt(const char* fmt, va_list args);

}  // namespace sd
