#include "io/json_limits.h"

#include "base/error.h"

namespace sd {

void check_json_depth(const std::string& path, const char* text, size_t size, int max_depth) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < size; ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;  // skip the escaped character
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[') {
            if (++depth > max_depth) {
                fail("%s: JSON nested deeper than %d levels at byte %zu", path.c_str(), max_depth,
                     i);
            }
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
}

}  // namespace sd
