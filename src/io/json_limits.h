// A guard run on untrusted JSON before it is parsed: nesting deeper than a format allows
// is an error naming the file (a hostile file could otherwise nest a million levels).
#pragma once

#include <cstddef>
#include <string>

namespace sd {

void check_json_depth(const std::string& path, const char* text, size_t size, int max_depth);

}  // namespace sd
