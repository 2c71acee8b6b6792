#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace sd {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open '%s': %s", path.c_str(), std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        fail("cannot stat '%s': %s", path.c_str(), std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("'%s' is not a regular file", path.c_str());
    }
    std::shared_ptr<MappedFile> file(new MappedFile());
    file->path_ = path;
    file->size_ = static_cast<size_t>(st.st_size);
    if (file->size_ > 0) {
        void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            fail("cannot map '%s': %s", path.c_str(), std::strerror(err));
        }
        // Pages this mapping reads in from disk come into the page cache as 2 MiB folios and
        // are mapped 2 MiB at a time, where the file system allows it (ext4, xfs on recent
        // kernels), by this and every later mapping of the file. A first touch of weights in
        // small pages costs ~0.25 s a GB under virtualisation (~0.02 s in 2 MiB ones), paid
        // again by each generation after the model went idle and dropped them from RSS. A
        // hint: pages the cache already holds keep their size.
        ::madvise(p, file->size_, MADV_HUGEPAGE);
        file->data_ = static_cast<const uint8_t*>(p);
    }
    file->fd_ = fd;  // kept for read()
    return file;
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
}

void MappedFile::read(size_t offset, void* dst, size_t length) const {
    SD_CHECK(offset <= size_ && length <= size_ - offset,
             "'%s': read of %zu bytes at %zu is past its end (%zu bytes)", path_.c_str(), length,
             offset, size_);
    auto* out = static_cast<uint8_t*>(dst);
    while (length > 0) {
        const ssize_t n = ::pread(fd_, out, length, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            fail("cannot read '%s' at %zu: %s", path_.c_str(), offset,
                 n < 0 ? std::strerror(errno) : "the file got shorter");
        out += n;
        offset += static_cast<size_t>(n);
        length -= static_cast<size_t>(n);
    }
}

void MappedFile::populate_pages(size_t offset, size_t length) const {
#ifdef MADV_POPULATE_READ
    if (!data_ || offset >= size_) return;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t begin = offset / page * page;
    const size_t end = std::min(size_, offset + length);
    ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_POPULATE_READ);
#else
    (void)offset;
    (void)length;
#endif
}

void MappedFile::release_pages(size_t offset, size_t length) const {
    if (!data_ || offset >= size_) return;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    size_t begin = (offset + page - 1) / page * page;  // only whole pages inside the range
    size_t end = std::min(size_, offset + length) / page * page;
    if (end <= begin) return;
    ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace sd
