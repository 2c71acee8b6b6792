#include "base/error.h"

namespace sd {

void fail(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string message = vstrfmt(fmt, args);
    va_end(args);
    throw Error(message);
}

}  // namespace sd
