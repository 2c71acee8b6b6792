#include "tokenizer/tokenizer_files.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/strfmt.h"
#include "tokenizer/unicode_text.h"

namespace sd {

std::string read_tokenizer_file(const std::string& path, const char* what) {
    constexpr uintmax_t kMaxFileBytes = 64u << 20;
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) fail("%s: no such file (%s)", path.c_str(), what);
    const uintmax_t size = fs::file_size(path, ec);
    if (ec) fail("%s: cannot read its size: %s", path.c_str(), ec.message().c_str());
    if (size > kMaxFileBytes) {
        fail("%s: %ju bytes is far more than a %s holds (limit %ju)", path.c_str(), size, what,
             kMaxFileBytes);
    }
    std::ifstream in(path, std::ios::binary);
    std::string data(static_cast<size_t>(size), '\0');
    if (!in || !in.read(data.data(), static_cast<std::streamsize>(size)))
        fail("%s: cannot read the file", path.c_str());
    return data;
}

std::string numbered_places(const std::vector<std::string>& searched) {
    std::string places;
    for (size_t i = 0; i < searched.size(); ++i)
        places += strfmt("\n  %zu. %s", i + 1, searched[i].c_str());
    return places;
}

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        start = end + 1;
    }
    return lines;
}

std::string printable_excerpt(std::string_view s, size_t max) {
    std::string out;
    for (size_t i = 0; i < s.size() && i < max; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) {
            out += strfmt("\\x%02X", c);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    if (s.size() > max) out += strfmt("... (%zu bytes)", s.size());
    return unicode::sanitize_utf8(out);
}

bool try_named_tokenizer_dirs(
    const std::string& tokenizer_dir, bool use_env, std::vector<std::string>& searched,
    const std::function<bool(const std::string&, const char*)>& try_root) {
    if (tokenizer_dir.empty()) {
        searched.push_back("--tokenizer-dir: not given");
    } else if (try_root(tokenizer_dir, "--tokenizer-dir")) {
        return true;
    }
    const char* env = use_env ? std::getenv("SD_TOKENIZER_DIR") : nullptr;
    if (!use_env) {
        searched.push_back("SD_TOKENIZER_DIR: not consulted");
    } else if (!env || !*env) {
        searched.push_back("SD_TOKENIZER_DIR: not set");
    } else {
        return try_root(env, "SD_TOKENIZER_DIR");
    }
    return false;
}

std::vector<std::filesystem::path> folders_near(const std::string& path, const char* subfolder) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(path);
    const fs::path dir = fs::is_directory(p, ec) ? p : p.parent_path();
    const fs::path base = dir.empty() ? fs::path(".") : dir;
    return {base, base / subfolder, base.parent_path() / subfolder};
}

}  // namespace sd
