#include "output_paths.h"

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "image/image_io.h"

namespace cli {
namespace {

// Length of the specifier "%[0-9]{0,3}d" at s[i] (s[i] == '%'), 0 when there is none.
size_t specifier_length(const std::string& s, size_t i) {
    size_t j = i + 1;
    while (j < s.size() && j - i - 1 < 3 && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    return j < s.size() && s[j] == 'd' ? j - i + 1 : 0;
}

// base_INDEX.ext, or base.ext for index < 0.
std::string numbered(const std::string& base, const std::string& ext, int index) {
    std::string path = base;
    if (index >= 0) {
        path += '_';
        path += std::to_string(index);
    }
    path += ext;
    return path;
}

}  // namespace

bool has_sequence_specifier(const std::string& path) {
    for (size_t i = 0; i < path.size(); ++i) {
        if (path[i] != '%') continue;
        if (i + 1 < path.size() && path[i + 1] == '%') {
            ++i;
            continue;
        }
        if (specifier_length(path, i) > 0) return true;
    }
    return false;
}

std::string format_sequence(const std::string& pattern, int index) {
    std::string out;
    for (size_t i = 0; i < pattern.size();) {
        if (pattern[i] != '%') {
            out += pattern[i++];
        } else if (i + 1 < pattern.size() && pattern[i + 1] == '%') {
            out += '%';
            i += 2;
        } else if (size_t n = specifier_length(pattern, i); n > 0) {
            char buffer[32];
            std::snprintf(buffer, sizeof(buffer), pattern.substr(i, n).c_str(), index);
            out += buffer;
            i += n;
        } else {
            out += pattern[i++];
        }
    }
    return out;
}

std::vector<std::string> output_paths(const std::string& output, int count, int begin_index) {
    namespace fs = std::filesystem;
    const fs::path path(output);
    std::string base = output, ext = path.has_extension() ? path.extension().string() : "";
    const bool known = sd::image::format_from_path(output) != sd::image::Format::Unknown;
    if (known) base = output.substr(0, output.size() - ext.size());
    if (!known) ext = ".png";
    const int begin = begin_index < 0 ? 0 : begin_index;
    std::vector<std::string> paths;
    const bool sequence = has_sequence_specifier(output);
    for (int i = 0; i < count; ++i) {
        if (sequence)
            paths.push_back(format_sequence(base + ext, begin + i));
        else
            paths.push_back(numbered(base, ext, count > 1 ? begin + i : -1));
    }
    return paths;
}

}  // namespace cli
