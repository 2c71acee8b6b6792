#include "io/file_output.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace sd {

FileOutput::FileOutput(const std::string& path) : path_(path), part_path_(path + ".part") {
    file_ = std::fopen(part_path_.c_str(), "wb");
    if (!file_) fail("cannot create '%s': %s", part_path_.c_str(), std::strerror(errno));
}

FileOutput::~FileOutput() {
    if (file_) {
        std::fclose(file_);
        std::remove(part_path_.c_str());
    }
}

void FileOutput::write(const void* data, size_t bytes) {
    if (bytes == 0) return;
    if (std::fwrite(data, 1, bytes, file_) != bytes) {
        fail("writing '%s' failed: %s", part_path_.c_str(), std::strerror(errno));
    }
    position_ += bytes;
}

void FileOutput::write_zeros(size_t bytes) {
    static const std::vector<uint8_t> zeros(4096, 0);
    while (bytes > 0) {
        size_t n = std::min(bytes, zeros.size());
        write(zeros.data(), n);
        bytes -= n;
    }
}

void FileOutput::commit() {
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) {
        std::remove(part_path_.c_str());
        fail("closing '%s' failed: %s", part_path_.c_str(), std::strerror(errno));
    }
    if (std::rename(part_path_.c_str(), path_.c_str()) != 0) {
        int err = errno;
        std::remove(part_path_.c_str());
        fail("cannot rename '%s' to '%s': %s", part_path_.c_str(), path_.c_str(),
             std::strerror(err));
    }
}

}  // namespace sd
