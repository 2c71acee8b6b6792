#include "exif_report.h"

#include <cstdio>
#include <map>
#include <set>
#include <vector>

namespace cli {
namespace {

using json = nlohmann::json;

struct Tiff {
    const uint8_t* data;
    size_t size;
    bool little_endian;

    uint32_t u16(size_t at) const {
        return little_endian ? data[at] | (data[at + 1] << 8) : (data[at] << 8) | data[at + 1];
    }
    uint32_t u32(size_t at) const {
        return little_endian ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
    }
};

const std::map<uint32_t, const char*>& tag_names(const std::string& ifd) {
    static const std::map<uint32_t, const char*> tiff = {{0x0100, "ImageWidth"},
                                                         {0x0101, "ImageLength"},
                                                         {0x0102, "BitsPerSample"},
                                                         {0x0103, "Compression"},
                                                         {0x0106, "PhotometricInterpretation"},
                                                         {0x010E, "ImageDescription"},
                                                         {0x010F, "Make"},
                                                         {0x0110, "Model"},
                                                         {0x0112, "Orientation"},
                                                         {0x011A, "XResolution"},
                                                         {0x011B, "YResolution"},
                                                         {0x0128, "ResolutionUnit"},
                                                         {0x0131, "Software"},
                                                         {0x0132, "DateTime"},
                                                         {0x013B, "Artist"},
                                                         {0x8298, "Copyright"},
                                                         {0x8769, "ExifIFDPointer"},
                                                         {0x8825, "GPSInfoIFDPointer"}};
    static const std::map<uint32_t, const char*> exif = {{0x829A, "ExposureTime"},
                                                         {0x829D, "FNumber"},
                                                         {0x8827, "ISOSpeedRatings"},
                                                         {0x9000, "ExifVersion"},
                                                         {0x9003, "DateTimeOriginal"},
                                                         {0x9004, "DateTimeDigitized"},
                                                         {0x9209, "Flash"},
                                                         {0x920A, "FocalLength"},
                                                         {0x927C, "MakerNote"},
                                                         {0x9286, "UserComment"},
                                                         {0xA001, "ColorSpace"},
                                                         {0xA002, "PixelXDimension"},
                                                         {0xA003, "PixelYDimension"},
                                                         {0xA005, "InteroperabilityIFDPointer"},
                                                         {0xA434, "LensModel"}};
    static const std::map<uint32_t, const char*> gps = {
        {0x0000, "GPSVersionID"},    {0x0001, "GPSLatitudeRef"}, {0x0002, "GPSLatitude"},
        {0x0003, "GPSLongitudeRef"}, {0x0004, "GPSLongitude"},   {0x0006, "GPSAltitude"},
        {0x001D, "GPSDateStamp"}};
    static const std::map<uint32_t, const char*> interop = {{0x0001, "InteroperabilityIndex"},
                                                            {0x0002, "InteroperabilityVersion"}};
    if (ifd == "Exif") return exif;
    if (ifd == "GPS") return gps;
    if (ifd == "Interop") return interop;
    return tiff;
}

std::string tag_name(uint32_t tag, const std::string& ifd) {
    const auto& names = tag_names(ifd);
    auto it = names.find(tag);
    if (it != names.end()) return it->second;
    char buffer[16];
    std::snprintf(buffer, sizeof(buffer), "0x%04X", tag);
    return buffer;
}

const char* type_name(uint32_t type) {
    static const char* const names[] = {"UNKNOWN", "BYTE",     "ASCII",    "SHORT",
                                        "LONG",    "RATIONAL", "UNKNOWN",  "UNDEFINED",
                                        "UNKNOWN", "SLONG",    "SRATIONAL"};
    return type < 11 ? names[type] : "UNKNOWN";
}

size_t type_size(uint32_t type) {
    switch (type) {
        case 1:
        case 2:
        case 7:
            return 1;
        case 3:
            return 2;
        case 4:
        case 9:
            return 4;
        case 5:
        case 10:
            return 8;
    }
    return 0;
}

std::string rational(const Tiff& t, size_t at, bool is_signed) {
    const uint32_t n = t.u32(at), d = t.u32(at + 4);
    char buffer[96];
    if (is_signed) {
        const int32_t sn = static_cast<int32_t>(n), sd = static_cast<int32_t>(d);
        if (sd != 0)
            std::snprintf(buffer, sizeof(buffer), "%d/%d (%.6f)", sn, sd,
                          static_cast<double>(sn) / sd);
        else
            std::snprintf(buffer, sizeof(buffer), "%d/%d", sn, sd);
    } else if (d != 0) {
        std::snprintf(buffer, sizeof(buffer), "%u/%u (%.6f)", n, d, static_cast<double>(n) / d);
    } else {
        std::snprintf(buffer, sizeof(buffer), "%u/%u", n, d);
    }
    return buffer;
}

json one_value(const Tiff& t, size_t at, uint32_t type) {
    switch (type) {
        case 1:
        case 7:
            return t.data[at];
        case 3:
            return t.u16(at);
        case 4:
            return t.u32(at);
        case 9:
            return static_cast<int32_t>(t.u32(at));
        case 5:
        case 10:
            return rational(t, at, type == 10);
    }
    return nullptr;
}

json tag_value(const Tiff& t, size_t at, uint32_t type, uint32_t count) {
    if (type == 2 || type == 7) {
        std::string s(reinterpret_cast<const char*>(t.data + at), count);
        if (type == 2)
            while (!s.empty() && s.back() == '\0') s.pop_back();
        return s;
    }
    if (count == 1) return one_value(t, at, type);
    json values = json::array();
    for (uint32_t i = 0; i < count; ++i)
        values.push_back(one_value(t, at + i * type_size(type), type));
    return values;
}

struct IfdWalk {
    const Tiff& tiff;
    bool include_raw;
    std::set<uint32_t> visited;
    std::string warning;
};

json parse_ifd(IfdWalk& w, uint32_t offset, const std::string& name);

json parse_entry(IfdWalk& w, size_t at, const std::string& ifd,
                 std::vector<std::pair<std::string, uint32_t>>* children) {
    const Tiff& t = w.tiff;
    const uint32_t tag = t.u16(at), type = t.u16(at + 2), count = t.u32(at + 4),
                   pointer = t.u32(at + 8);
    json entry = {
        {"id", tag}, {"name", tag_name(tag, ifd)}, {"type", type_name(type)}, {"count", count}};
    const size_t unit = type_size(type);
    if (unit == 0) {
        entry["error"] = "unsupported Exif type";
        return entry;
    }
    const uint64_t total = uint64_t{unit} * count;
    size_t value_at = at + 8;
    if (total > 4) {
        if (uint64_t{pointer} + total > t.size) {
            entry["error"] = "Exif value points outside payload";
            return entry;
        }
        value_at = pointer;
    }
    json value = tag_value(t, value_at, type, count);
    if (w.include_raw)
        value = {{"decoded", value}, {"raw_hex_preview", hex_preview(t.data + value_at, total)}};
    entry["value"] = value;
    if (tag == 0x8769 && (ifd == "IFD0" || ifd == "IFD1")) children->push_back({"Exif", pointer});
    if (tag == 0x8825 && (ifd == "IFD0" || ifd == "IFD1")) children->push_back({"GPS", pointer});
    if (tag == 0xA005 && ifd == "Exif") children->push_back({"Interop", pointer});
    return entry;
}

json parse_ifd(IfdWalk& w, uint32_t offset, const std::string& name) {
    const Tiff& t = w.tiff;
    if (offset == 0) return nullptr;
    if (!w.visited.insert(offset).second) {
        w.warning = "detected recursive IFD pointer";
        return nullptr;
    }
    if (uint64_t{offset} + 2 > t.size) {
        w.warning = "IFD offset out of range";
        return nullptr;
    }
    const uint32_t count = t.u16(offset);
    if (uint64_t{offset} + 2 + uint64_t{count} * 12 + 4 > t.size) {
        w.warning = "IFD entries exceed Exif payload size";
        return nullptr;
    }
    json ifd = {{"name", name}, {"tags", json::array()}};
    std::vector<std::pair<std::string, uint32_t>> children;
    for (uint32_t i = 0; i < count; ++i)
        ifd["tags"].push_back(parse_entry(w, offset + 2 + i * 12, name, &children));
    json parsed = json::array();
    for (const auto& [child, child_offset] : children) {
        json sub = parse_ifd(w, child_offset, child);
        if (!sub.is_null()) parsed.push_back(sub);
    }
    if (!parsed.empty()) ifd["children"] = parsed;
    const uint32_t next = t.u32(offset + 2 + count * 12);
    if (next != 0 && (name == "IFD0" || name == "IFD1")) {
        json sub = parse_ifd(w, next, "IFD1");
        if (!sub.is_null()) ifd["next_ifd"] = sub;
    }
    return ifd;
}

}  // namespace

std::string hex_preview(const uint8_t* data, size_t size, size_t limit) {
    std::string out;
    const size_t n = size < limit ? size : limit;
    for (size_t i = 0; i < n; ++i) {
        char buffer[4];
        std::snprintf(buffer, sizeof(buffer), "%02x", data[i]);
        if (i) out += ' ';
        out += buffer;
    }
    if (size > limit) out += " ...";
    return out;
}

json exif_report(const uint8_t* payload, size_t size, bool include_raw, std::string* error) {
    if (size < 8) {
        *error = "Exif payload too small";
        return json::object();
    }
    if (!(payload[0] == payload[1] && (payload[0] == 'I' || payload[0] == 'M'))) {
        *error = "invalid TIFF byte order";
        return json::object();
    }
    const Tiff tiff{payload, size, payload[0] == 'I'};
    if (tiff.u16(2) != 42) {
        *error = "unsupported TIFF magic " + std::to_string(tiff.u16(2));
        return json::object();
    }
    IfdWalk walk{tiff, include_raw, {}, {}};
    json ifd0 = parse_ifd(walk, tiff.u32(4), "IFD0");
    json report = {{"byte_order", tiff.little_endian ? "little_endian" : "big_endian"},
                   {"ifds", json::array()}};
    if (!ifd0.is_null()) report["ifds"].push_back(ifd0);
    if (!walk.warning.empty()) report["warning"] = walk.warning;
    return report;
}

}  // namespace cli
