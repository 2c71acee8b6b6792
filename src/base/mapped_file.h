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
    // Maps the range's pages in with one call (MADV_POPULATE_READ) rather than a page fault
    // per page on first touch; a hint, ignored where the kernel lacks it.
    void populate_pages(size_t offset, size_t length) const;
    // Copies bytes of the file (from the page cache, through the descriptor, so the mapping's
    // pages stay untouched) into dst; throws sd::Error naming the file on a failed read.
    void read(size_t offset, void* dst, size_t length) const;

  private:
    MappedFile() = default;
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    int fd_ = -1;
};

}  // namespace sd
