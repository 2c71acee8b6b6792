#include "tokenizer/tokenizer_files.h"

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/strfmt.h"

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

}  // namespace sd
