// A read-only memory mapping of a whole file. Model weights are used in place from it;
// the pages are the kernel's page cache, so RSS grows only with what is touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sd {

class MappedFile {
  public:
    // Maps `path` read-only; throws sd::Error naming the file when it cannot.
    static std::shared_ptr<MappedFile> open(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

    // Tells the kernel the byte range is no longer needed, dropping its pages from this
    // process's RSS (they stay in the page cache and come back on the next touch).
    void release_pages(size_t offset, size_t length) const;

  private:
    MappedFile() = default;
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace sd
