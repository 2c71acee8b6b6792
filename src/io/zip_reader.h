// A read-only view of a zip archive in a mapped file, as PyTorch writes its checkpoints:
// the central directory (ZIP64 included) is parsed once, and an entry's bytes are a span of
// the mapping. Only stored (uncompressed) entries can be read; anything else, and every
// offset or size that points outside the file, is an sd::Error naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sd {

class MappedFile;

struct ZipEntry {
    std::string name;
    uint64_t data_offset = 0;  // where the entry's bytes start in the file
    uint64_t size = 0;
    uint32_t crc32 = 0;
};

class ZipReader {
  public:
    explicit ZipReader(std::shared_ptr<const MappedFile> file);

    // In central-directory order.
    const std::vector<ZipEntry>& entries() const { return entries_; }
    const ZipEntry* find(const std::string& name) const;
    // The entry's bytes, in place.
    std::span<const uint8_t> data(const ZipEntry& entry) const;
    // The entry's bytes after checking them against the directory's CRC-32 (reads them all:
    // meant for small entries such as a pickle, not for tensor data).
    std::span<const uint8_t> checked_data(const ZipEntry& entry) const;

    const std::shared_ptr<const MappedFile>& file() const { return file_; }
    const std::string& path() const;

  private:
    std::shared_ptr<const MappedFile> file_;
    std::vector<ZipEntry> entries_;
    std::unordered_map<std::string, size_t> index_;
};

uint32_t zip_crc32(std::span<const uint8_t> bytes);

}  // namespace sd
