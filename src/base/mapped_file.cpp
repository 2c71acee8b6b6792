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
        file->data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    return file;
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
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
