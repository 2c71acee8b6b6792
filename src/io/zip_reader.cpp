// Zip layout (APPNOTE.TXT): local headers with each entry's bytes, then the central
// directory (one record per entry), then the end record; ZIP64 archives put a ZIP64 end
// record and its locator before the end record and move large sizes and offsets into a
// ZIP64 extra field (id 1) of each directory record. The directory is the authority: local
// headers are only used to find where an entry's bytes begin.
#include "io/zip_reader.h"

#include <array>
#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"

namespace sd {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kLocalSize = 30;
constexpr uint64_t kCentralSize = 46;
constexpr uint64_t kEndSize = 22;
constexpr uint64_t kLocatorSize = 20;
constexpr uint64_t kZip64EndSize = 56;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint32_t kSaturated32 = 0xffffffff;
constexpr uint16_t kSaturated16 = 0xffff;

uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}
uint32_t le32(const uint8_t* p) {
    return static_cast<uint32_t>(le16(p)) | static_cast<uint32_t>(le16(p + 2)) << 16;
}
uint64_t le64(const uint8_t* p) {
    return static_cast<uint64_t>(le32(p)) | static_cast<uint64_t>(le32(p + 4)) << 32;
}

struct Directory {
    uint64_t offset = 0;
    uint64_t size = 0;
    uint64_t count = 0;
};

// The end record: the last "PK\5\6" whose comment reaches exactly to the end of the file.
uint64_t find_end_record(const MappedFile& f) {
    const uint8_t* p = f.data();
    const uint64_t n = f.size();
    if (n < kEndSize)
        fail("%s: too short for a zip archive (%llu bytes)", f.path().c_str(),
             (unsigned long long)n);
    const uint64_t lowest = n - kEndSize > kMaxComment ? n - kEndSize - kMaxComment : 0;
    for (uint64_t pos = n - kEndSize;; --pos) {
        if (le32(p + pos) == kEndSig && pos + kEndSize + le16(p + pos + 20) == n) return pos;
        if (pos == lowest) break;
    }
    fail("%s: no zip end-of-central-directory record; the file is truncated or not a zip archive",
         f.path().c_str());
}

Directory read_zip64_end(const MappedFile& f, uint64_t locator) {
    const uint8_t* p = f.data();
    const char* path = f.path().c_str();
    if (le32(p + locator + 4) != 0 || le32(p + locator + 16) > 1)
        fail("%s: multi-part zip archives are not supported", path);
    const uint64_t at = le64(p + locator + 8);
    if (at > locator || locator - at < kZip64EndSize)
        fail("%s: the ZIP64 end record offset %llu lies outside the file", path,
             (unsigned long long)at);
    if (le32(p + at) != kZip64EndSig)
        fail("%s: no ZIP64 end record at byte %llu", path, (unsigned long long)at);
    if (le32(p + at + 16) != 0 || le32(p + at + 20) != 0)
        fail("%s: multi-part zip archives are not supported", path);
    Directory d;
    d.count = le64(p + at + 32);
    if (le64(p + at + 24) != d.count) fail("%s: multi-part zip archives are not supported", path);
    d.size = le64(p + at + 40);
    d.offset = le64(p + at + 48);
    // The directory must end before the ZIP64 end record.
    if (d.offset > at || d.size > at - d.offset) {
        fail("%s: the central directory (%llu bytes at byte %llu) lies outside the file", path,
             (unsigned long long)d.size, (unsigned long long)d.offset);
    }
    return d;
}

Directory read_directory(const MappedFile& f) {
    const uint8_t* p = f.data();
    const char* path = f.path().c_str();
    const uint64_t end = find_end_record(f);
    Directory d;
    if (end >= kLocatorSize && le32(p + end - kLocatorSize) == kZip64LocatorSig) {
        d = read_zip64_end(f, end - kLocatorSize);
    } else {
        if (le16(p + end + 4) != 0 || le16(p + end + 6) != 0 ||
            le16(p + end + 8) != le16(p + end + 10))
            fail("%s: multi-part zip archives are not supported", path);
        d.count = le16(p + end + 10);
        d.size = le32(p + end + 12);
        d.offset = le32(p + end + 16);
        if (d.offset > end || d.size > end - d.offset) {
            fail("%s: the central directory (%llu bytes at byte %llu) lies outside the file", path,
                 (unsigned long long)d.size, (unsigned long long)d.offset);
        }
    }
    if (d.count > d.size / kCentralSize) {
        fail("%s: the zip directory claims %llu entries, more than its %llu bytes can hold", path,
             (unsigned long long)d.count, (unsigned long long)d.size);
    }
    return d;
}

// Sizes and offset of one directory record, before and after its ZIP64 extra field.
struct Record {
    std::string name;
    uint16_t flags = 0;
    uint16_t method = 0;
    uint32_t crc = 0;
    uint64_t compressed = 0;
    uint64_t size = 0;
    uint64_t local = 0;
    uint32_t disk = 0;
};

// Reads the 64-bit values of the ZIP64 extra field (id 1) for the fields that the record
// saturated, in the order the format lists them.
void apply_zip64_extra(const std::string& path, const uint8_t* extra, uint64_t len, Record& r) {
    bool need_size = r.size == kSaturated32, need_comp = r.compressed == kSaturated32;
    bool need_local = r.local == kSaturated32, need_disk = r.disk == kSaturated16;
    for (uint64_t pos = 0; pos + 4 <= len;) {
        const uint16_t id = le16(extra + pos), n = le16(extra + pos + 2);
        pos += 4;
        if (n > len - pos)
            fail("%s: entry '%s': an extra field runs past the end of its record", path.c_str(),
                 r.name.c_str());
        if (id == 1) {
            uint64_t at = pos;
            auto take = [&](bool need, uint64_t& out) {
                if (!need) return;
                if (at + 8 > pos + n)
                    fail("%s: entry '%s': the ZIP64 extra field is too short", path.c_str(),
                         r.name.c_str());
                out = le64(extra + at);
                at += 8;
            };
            uint64_t disk = r.disk;
            take(need_size, r.size);
            take(need_comp, r.compressed);
            take(need_local, r.local);
            if (need_disk && at + 4 <= pos + n) disk = le32(extra + at);
            r.disk = static_cast<uint32_t>(disk);
            need_size = need_comp = need_local = need_disk = false;
        }
        pos += n;
    }
    if (need_size || need_comp || need_local) {
        fail("%s: entry '%s' has 32-bit fields set to 0xffffffff but no ZIP64 extra field",
             path.c_str(), r.name.c_str());
    }
}

// Parses the directory record at `pos`, which must lie inside [pos, end); returns the
// position of the next one.
uint64_t read_record(const MappedFile& f, uint64_t pos, uint64_t end, Record& r) {
    const uint8_t* p = f.data();
    const char* path = f.path().c_str();
    if (end - pos < kCentralSize || le32(p + pos) != kCentralSig) {
        fail("%s: truncated or corrupt zip central directory at byte %llu", path,
             (unsigned long long)pos);
    }
    const uint64_t name_len = le16(p + pos + 28), extra_len = le16(p + pos + 30);
    const uint64_t comment_len = le16(p + pos + 32);
    const uint64_t total = kCentralSize + name_len + extra_len + comment_len;
    if (end - pos < total) {
        fail("%s: truncated zip central directory: the record at byte %llu runs past its end", path,
             (unsigned long long)pos);
    }
    r.name.assign(reinterpret_cast<const char*>(p + pos + kCentralSize), name_len);
    r.flags = le16(p + pos + 8);
    r.method = le16(p + pos + 10);
    r.crc = le32(p + pos + 16);
    r.compressed = le32(p + pos + 20);
    r.size = le32(p + pos + 24);
    r.disk = le16(p + pos + 34);
    r.local = le32(p + pos + 42);
    apply_zip64_extra(f.path(), p + pos + kCentralSize + name_len, extra_len, r);
    return pos + total;
}

void check_storable(const std::string& path, const Record& r) {
    if (r.disk != 0) fail("%s: multi-part zip archives are not supported", path.c_str());
    if (r.flags & 1) fail("%s: entry '%s' is encrypted", path.c_str(), r.name.c_str());
    if (r.method != 0) {
        fail(
            "%s: entry '%s' is compressed (method %u); only stored (uncompressed) entries can be "
            "read",
            path.c_str(), r.name.c_str(), r.method);
    }
    if (r.compressed != r.size) {
        fail("%s: entry '%s' is stored but its compressed size %llu differs from its size %llu",
             path.c_str(), r.name.c_str(), (unsigned long long)r.compressed,
             (unsigned long long)r.size);
    }
}

// Where the entry's bytes start: after its local header, which lies before the directory.
uint64_t locate_data(const MappedFile& f, const Record& r, uint64_t directory) {
    const uint8_t* p = f.data();
    const char* path = f.path().c_str();
    const char* name = r.name.c_str();
    if (r.local > directory || directory - r.local < kLocalSize || le32(p + r.local) != kLocalSig) {
        fail("%s: entry '%s': no local header at byte %llu", path, name,
             (unsigned long long)r.local);
    }
    const uint64_t name_len = le16(p + r.local + 26), extra_len = le16(p + r.local + 28);
    const uint64_t data = r.local + kLocalSize + name_len + extra_len;
    if (data > directory || name_len != r.name.size() ||
        std::memcmp(p + r.local + kLocalSize, r.name.data(), name_len) != 0) {
        fail("%s: entry '%s': its local header at byte %llu does not match the directory", path,
             name, (unsigned long long)r.local);
    }
    if (r.size > directory - data) {
        fail("%s: entry '%s' (%llu bytes at byte %llu) runs past the end of the archive's data",
             path, name, (unsigned long long)r.size, (unsigned long long)data);
    }
    return data;
}

constexpr std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

}  // namespace

uint32_t zip_crc32(std::span<const uint8_t> bytes) {
    uint32_t c = 0xffffffffu;
    for (uint8_t b : bytes) c = kCrcTable[(c ^ b) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

ZipReader::ZipReader(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {
    const Directory d = read_directory(*file_);
    const uint64_t end = d.offset + d.size;
    entries_.reserve(d.count);
    uint64_t pos = d.offset;
    for (uint64_t i = 0; i < d.count; ++i) {
        Record r;
        pos = read_record(*file_, pos, end, r);
        check_storable(path(), r);
        ZipEntry e{r.name, locate_data(*file_, r, d.offset), r.size, r.crc};
        if (!index_.emplace(e.name, entries_.size()).second)
            fail("%s: entry '%s' appears twice in the zip directory", path().c_str(),
                 e.name.c_str());
        entries_.push_back(std::move(e));
    }
}

const ZipEntry* ZipReader::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &entries_[it->second];
}

std::span<const uint8_t> ZipReader::data(const ZipEntry& entry) const {
    return {file_->data() + entry.data_offset, static_cast<size_t>(entry.size)};
}

std::span<const uint8_t> ZipReader::checked_data(const ZipEntry& entry) const {
    std::span<const uint8_t> bytes = data(entry);
    if (zip_crc32(bytes) != entry.crc32)
        fail("%s: entry '%s' is corrupt (CRC-32 mismatch)", path().c_str(), entry.name.c_str());
    return bytes;
}

const std::string& ZipReader::path() const {
    return file_->path();
}

}  // namespace sd
