#include "io/zip_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "base/mapped_file.h"
#include "io_test_util.h"

namespace sd {
namespace {

using test::error_of;
using test::write_temp;

void put16(std::string& s, uint16_t v) {
    s.append(reinterpret_cast<const char*>(&v), 2);
}
void put32(std::string& s, uint32_t v) {
    s.append(reinterpret_cast<const char*>(&v), 4);
}
void put64(std::string& s, uint64_t v) {
    s.append(reinterpret_cast<const char*>(&v), 8);
}
void patch16(std::string& s, size_t at, uint16_t v) {
    std::memcpy(&s[at], &v, 2);
}
void patch32(std::string& s, size_t at, uint32_t v) {
    std::memcpy(&s[at], &v, 4);
}
void patch64(std::string& s, size_t at, uint64_t v) {
    std::memcpy(&s[at], &v, 8);
}

struct Entry {
    std::string name;
    std::string data;
    uint16_t method = 0;
    bool zip64 = false;  // sizes and offset only in a ZIP64 extra field of the directory
};

// A zip archive and where its parts are, for tests that break one of them.
struct Zip {
    std::string bytes;
    std::vector<size_t> locals;   // local header of each entry
    std::vector<size_t> records;  // directory record of each entry
    size_t directory = 0;
    size_t zip64_end = 0;  // when written
    size_t end = 0;
};

Zip make_zip(const std::vector<Entry>& entries, bool zip64_end = false) {
    Zip z;
    std::string& s = z.bytes;
    for (const Entry& e : entries) {
        z.locals.push_back(s.size());
        put32(s, 0x04034b50);
        put16(s, 20);
        put16(s, 0);
        put16(s, e.method);
        put32(s, 0);
        put32(s, zip_crc32({reinterpret_cast<const uint8_t*>(e.data.data()), e.data.size()}));
        put32(s, static_cast<uint32_t>(e.data.size()));
        put32(s, static_cast<uint32_t>(e.data.size()));
        put16(s, static_cast<uint16_t>(e.name.size()));
        put16(s, 0);
        s += e.name + e.data;
    }
    z.directory = s.size();
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        z.records.push_back(s.size());
        const uint32_t size32 = e.zip64 ? 0xffffffffu : static_cast<uint32_t>(e.data.size());
        put32(s, 0x02014b50);
        put16(s, 20);
        put16(s, 20);
        put16(s, 0);
        put16(s, e.method);
        put32(s, 0);
        put32(s, zip_crc32({reinterpret_cast<const uint8_t*>(e.data.data()), e.data.size()}));
        put32(s, size32);
        put32(s, size32);
        put16(s, static_cast<uint16_t>(e.name.size()));
        put16(s, e.zip64 ? 28 : 0);
        put32(s, 0);  // comment length, disk
        put16(s, 0);
        put32(s, 0);
        put32(s, e.zip64 ? 0xffffffffu : static_cast<uint32_t>(z.locals[i]));
        s += e.name;
        if (e.zip64) {
            put16(s, 1);
            put16(s, 24);
            put64(s, e.data.size());
            put64(s, e.data.size());
            put64(s, z.locals[i]);
        }
    }
    const size_t dir_size = s.size() - z.directory;
    if (zip64_end) {
        z.zip64_end = s.size();
        put32(s, 0x06064b50);
        put64(s, 44);
        put16(s, 45);
        put16(s, 45);
        put32(s, 0);
        put32(s, 0);
        put64(s, entries.size());
        put64(s, entries.size());
        put64(s, dir_size);
        put64(s, z.directory);
        put32(s, 0x07064b50);
        put32(s, 0);
        put64(s, z.zip64_end);
        put32(s, 1);
    }
    z.end = s.size();
    put32(s, 0x06054b50);
    put32(s, 0);
    put16(s, zip64_end ? 0xffff : static_cast<uint16_t>(entries.size()));
    put16(s, zip64_end ? 0xffff : static_cast<uint16_t>(entries.size()));
    put32(s, zip64_end ? 0xffffffffu : static_cast<uint32_t>(dir_size));
    put32(s, zip64_end ? 0xffffffffu : static_cast<uint32_t>(z.directory));
    put16(s, 0);
    return z;
}

std::vector<Entry> sample_entries(bool zip64) {
    return {{"archive/data.pkl", "pickle bytes", 0, zip64},
            {"archive/empty", "", 0, zip64},
            {"archive/data/0", std::string(100, 'x'), 0, zip64}};
}

ZipReader open_zip(const std::string& path) {
    return ZipReader(MappedFile::open(path));
}

std::string text(std::span<const uint8_t> s) {
    return {s.begin(), s.end()};
}

void expect_sample(const ZipReader& zip) {
    ASSERT_EQ(zip.entries().size(), 3u);
    EXPECT_EQ(zip.entries()[0].name, "archive/data.pkl");
    EXPECT_EQ(text(zip.checked_data(zip.entries()[0])), "pickle bytes");
    const ZipEntry* empty = zip.find("archive/empty");
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(empty->size, 0u);
    EXPECT_EQ(text(zip.checked_data(*empty)), "");
    const ZipEntry* d = zip.find("archive/data/0");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(text(zip.data(*d)), std::string(100, 'x'));
    // The bytes are the mapping itself, not a copy.
    EXPECT_EQ(zip.data(*d).data(), zip.file()->data() + d->data_offset);
    EXPECT_EQ(zip.find("archive/missing"), nullptr);
}

TEST(ZipReader, ReadsStoredEntries) {
    expect_sample(open_zip(write_temp("plain.zip", make_zip(sample_entries(false)).bytes)));
}

TEST(ZipReader, ReadsZip64Archives) {
    expect_sample(open_zip(write_temp("z64.zip", make_zip(sample_entries(true), true).bytes)));
    // ZIP64 end record with plain directory records, as miniz writes for small archives.
    expect_sample(open_zip(write_temp("z64b.zip", make_zip(sample_entries(false), true).bytes)));
}

TEST(ZipReader, AcceptsAnArchiveComment) {
    Zip z = make_zip(sample_entries(false));
    patch16(z.bytes, z.end + 20, 5);
    z.bytes += "hello";
    expect_sample(open_zip(write_temp("comment.zip", z.bytes)));
}

TEST(ZipReader, Crc32MatchesTheStandardCheckValue) {
    const std::string s = "123456789";
    EXPECT_EQ(zip_crc32({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xcbf43926u);
}

struct BadZip {
    const char* name;
    std::string bytes;
    const char* message;
};

std::vector<BadZip> hostile_zips() {
    const Zip ok = make_zip(sample_entries(false));
    const Zip ok64 = make_zip(sample_entries(true), true);
    std::vector<BadZip> cases;
    auto add = [&](const char* name, const Zip& base, auto&& edit, const char* message) {
        std::string b = base.bytes;
        edit(b);
        cases.push_back({name, b, message});
    };
    cases.push_back({"empty", "", "too short"});
    cases.push_back({"not_zip", std::string(200, 'q'), "no zip end-of-central-directory"});
    cases.push_back({"cut_end", ok.bytes.substr(0, ok.bytes.size() - 3), "no zip end-of-central"});
    add(
        "dir_size_past_end", ok, [&](std::string& b) { patch32(b, ok.end + 12, 100000); },
        "lies outside the file");
    add(
        "dir_offset_past_end", ok, [&](std::string& b) { patch32(b, ok.end + 16, 0xfffffff0u); },
        "lies outside the file");
    add(
        "too_many_entries", ok,
        [&](std::string& b) {
            patch16(b, ok.end + 8, 9000);
            patch16(b, ok.end + 10, 9000);
        },
        "claims 9000 entries");
    // The directory's size cuts its last record short.
    add(
        "truncated_directory", ok,
        [&](std::string& b) {
            patch32(b, ok.end + 12, static_cast<uint32_t>(ok.end - ok.directory - 20));
        },
        "truncated or corrupt zip central directory");
    add(
        "truncated_record", ok,
        [&](std::string& b) {
            patch32(b, ok.end + 12, static_cast<uint32_t>(ok.end - ok.directory - 10));
        },
        "runs past its end");
    add(
        "record_name_past_directory", ok,
        [&](std::string& b) { patch16(b, ok.records[2] + 28, 500); }, "runs past its end");
    add(
        "bad_record_signature", ok, [&](std::string& b) { b[ok.records[1]] = 'X'; },
        "truncated or corrupt zip central directory");
    add(
        "local_offset_past_directory", ok,
        [&](std::string& b) { patch32(b, ok.records[1] + 42, static_cast<uint32_t>(ok.end)); },
        "no local header");
    add(
        "local_offset_huge", ok,
        [&](std::string& b) { patch32(b, ok.records[0] + 42, 0xfffffff0u); }, "no local header");
    add(
        "local_signature", ok, [&](std::string& b) { b[ok.locals[2]] = 'Q'; }, "no local header");
    add(
        "local_name_mismatch", ok, [&](std::string& b) { b[ok.locals[2] + 30] = 'A'; },
        "does not match the directory");
    add(
        "local_extra_past_directory", ok,
        [&](std::string& b) { patch16(b, ok.locals[2] + 28, 60000); },
        "does not match the directory");
    add(
        "size_past_data", ok,
        [&](std::string& b) {
            patch32(b, ok.records[2] + 20, 5000);
            patch32(b, ok.records[2] + 24, 5000);
        },
        "'archive/data/0' (5000 bytes at byte");
    add(
        "compressed", ok, [&](std::string& b) { patch16(b, ok.records[0] + 10, 8); },
        "entry 'archive/data.pkl' is compressed (method 8)");
    add(
        "encrypted", ok, [&](std::string& b) { patch16(b, ok.records[1] + 8, 1); },
        "'archive/empty' is encrypted");
    add(
        "stored_size_mismatch", ok, [&](std::string& b) { patch32(b, ok.records[2] + 20, 99); },
        "compressed size 99 differs");
    add(
        "multi_disk", ok, [&](std::string& b) { patch16(b, ok.end + 4, 1); }, "multi-part");
    add(
        "entry_on_other_disk", ok, [&](std::string& b) { patch16(b, ok.records[0] + 34, 2); },
        "multi-part");
    add(
        "central_name_differs", ok, [&](std::string& b) { b[ok.records[1] + 46 + 8] = 'd'; },
        "does not match");
    add(
        "saturated_without_zip64_extra", ok,
        [&](std::string& b) {
            patch32(b, ok.records[2] + 20, 0xffffffffu);
            patch32(b, ok.records[2] + 24, 0xffffffffu);
        },
        "no ZIP64 extra field");
    add(
        "zip64_extra_too_short", ok64,
        [&](std::string& b) { patch16(b, ok64.records[0] + 46 + 16 + 2, 8); },
        "ZIP64 extra field is too short");
    add(
        "zip64_extra_past_record", ok64,
        [&](std::string& b) { patch16(b, ok64.records[0] + 46 + 16 + 2, 200); },
        "runs past the end of its record");
    add(
        "zip64_huge_size", ok64,
        [&](std::string& b) {
            patch64(b, ok64.records[2] + 46 + 14 + 4, uint64_t{1} << 62);
            patch64(b, ok64.records[2] + 46 + 14 + 12, uint64_t{1} << 62);
        },
        "runs past the end of the archive's data");
    add(
        "zip64_huge_offset", ok64,
        [&](std::string& b) { patch64(b, ok64.records[1] + 46 + 13 + 20, ~uint64_t{0} - 10); },
        "no local header");
    add(
        "zip64_end_offset_bad", ok64,
        [&](std::string& b) { patch64(b, ok64.end - 20 + 8, 1u << 30); },
        "ZIP64 end record offset");
    add(
        "zip64_end_signature", ok64, [&](std::string& b) { b[ok64.zip64_end] = 'x'; },
        "no ZIP64 end record");
    add(
        "zip64_dir_offset_huge", ok64,
        [&](std::string& b) { patch64(b, ok64.zip64_end + 48, uint64_t{1} << 63); },
        "lies outside the file");
    add(
        "zip64_dir_size_huge", ok64,
        [&](std::string& b) { patch64(b, ok64.zip64_end + 40, ~uint64_t{0}); },
        "lies outside the file");
    add(
        "zip64_count_huge", ok64,
        [&](std::string& b) {
            patch64(b, ok64.zip64_end + 24, uint64_t{1} << 60);
            patch64(b, ok64.zip64_end + 32, uint64_t{1} << 60);
        },
        "claims 1152921504606846976 entries");
    add(
        "zip64_multi_disk", ok64, [&](std::string& b) { patch32(b, ok64.end - 20 + 16, 3); },
        "multi-part");
    return cases;
}

TEST(ZipReader, HostileArchivesGiveErrorsNamingTheFile) {
    for (const BadZip& c : hostile_zips()) {
        std::string path = write_temp(std::string("hostile_") + c.name + ".zip", c.bytes);
        std::string msg = error_of([&] { open_zip(path); });
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
        EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << c.name << ": " << msg;
        std::remove(path.c_str());
    }
}

TEST(ZipReader, DuplicateNamesAndCorruptDataAreRefused) {
    std::vector<Entry> twice = {{"a/x", "1"}, {"a/x", "2"}};
    std::string path = write_temp("twice.zip", make_zip(twice).bytes);
    EXPECT_ERROR_CONTAINS(open_zip(path), "entry 'a/x' appears twice");

    Zip z = make_zip(sample_entries(false));
    z.bytes[z.locals[0] + 30 + 16] ^= 1;  // a byte of data.pkl
    ZipReader zip = open_zip(write_temp("crc.zip", z.bytes));
    EXPECT_ERROR_CONTAINS(zip.checked_data(zip.entries()[0]), "'archive/data.pkl' is corrupt");
}

TEST(ZipReader, EveryTruncationAndCorruptionFailsCleanly) {
    for (bool zip64 : {false, true}) {
        const std::string good = make_zip(sample_entries(zip64), zip64).bytes;
        for (size_t n = 0; n < good.size(); ++n) {
            std::string path = write_temp("trunc.zip", good.substr(0, n));
            EXPECT_NE(error_of([&] { open_zip(path); }).find(path), std::string::npos) << n;
        }
        std::mt19937 gen(zip64 ? 11 : 12);
        for (int i = 0; i < 600; ++i) {
            std::string bad = good;
            for (int k = 0; k < 3; ++k) bad[gen() % bad.size()] = static_cast<char>(gen());
            std::string path = write_temp("fuzz.zip", bad);
            try {
                ZipReader zip = open_zip(path);
                for (const ZipEntry& e : zip.entries()) {
                    volatile uint8_t sink = 0;
                    for (uint8_t v : zip.data(e)) sink = sink ^ v;
                }
            } catch (const Error&) {
            }
        }
    }
}

}  // namespace
}  // namespace sd
