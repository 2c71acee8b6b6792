// A reason handed to the caller of a C entry point: copied into its buffer, cut short to
// `size` bytes with the NUL; nothing when it gave none.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

namespace sd::api {

inline void hand_out_message(const std::string& text, char* message, size_t size) {
    if (!message || size == 0) return;
    const size_t n = std::min(text.size(), size - 1);
    text.copy(message, n);
    message[n] = '\0';
}

}  // namespace sd::api
