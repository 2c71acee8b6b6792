#include "metadata_report.h"

#include <zlib.h>

#include <cctype>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "exif_report.h"
#include "image/image_io.h"

namespace cli {
namespace {

using json = nlohmann::json;
using Bytes = std::vector<uint8_t>;

constexpr size_t kMaxInflated = size_t{64} << 20;
constexpr size_t kBriefLength = 240;

uint32_t be16(const uint8_t* p) {
    return (uint32_t{p[0]} << 8) | p[1];
}
uint32_t be32(const uint8_t* p) {
    return (be16(p) << 16) | be16(p + 2);
}
uint32_t le32(const uint8_t* p) {
    return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

std::string text_of(const uint8_t* begin, const uint8_t* end) {
    return std::string(reinterpret_cast<const char*>(begin), static_cast<size_t>(end - begin));
}

const uint8_t* find_nul(const uint8_t* begin, const uint8_t* end) {
    return static_cast<const uint8_t*>(std::memchr(begin, 0, static_cast<size_t>(end - begin)));
}

// zlib data to text; on failure the reason goes to the entry as decompression_error.
bool inflate_into(const uint8_t* data, size_t size, std::string* out, std::string* error) {
    z_stream zs{};
    if (inflateInit(&zs) != Z_OK) {
        *error = "zlib initialisation failed";
        return false;
    }
    zs.next_in = const_cast<Bytef*>(data);
    zs.avail_in = static_cast<uInt>(size);
    char buffer[16384];
    int status = Z_OK;
    while (status == Z_OK) {
        zs.next_out = reinterpret_cast<Bytef*>(buffer);
        zs.avail_out = sizeof(buffer);
        status = inflate(&zs, Z_NO_FLUSH);
        if (status == Z_OK || status == Z_STREAM_END)
            out->append(buffer, sizeof(buffer) - zs.avail_out);
        if (status == Z_OK && out->size() > kMaxInflated) status = Z_MEM_ERROR;
        if (status == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) status = Z_BUF_ERROR;
    }
    inflateEnd(&zs);
    if (status == Z_STREAM_END) return true;
    *error = "zlib decompression failed with status " + std::to_string(status);
    return false;
}

void put_inflated(json& data, const char* key, const uint8_t* begin, const uint8_t* end) {
    std::string text, error;
    if (inflate_into(begin, static_cast<size_t>(end - begin), &text, &error))
        data[key] = text;
    else
        data["decompression_error"] = error;
}

json png_text_data(const std::string& type, const uint8_t* p, const uint8_t* end) {
    const uint8_t* sep = find_nul(p, end);
    if (!sep) return nullptr;
    json data = {{"keyword", text_of(p, sep)}};
    if (type == "tEXt") {
        data["text"] = text_of(sep + 1, end);
    } else if (type == "zTXt") {
        if (sep + 2 > end) return nullptr;
        data["compression_method"] = sep[1];
        put_inflated(data, "text", sep + 2, end);
    } else {  // iTXt
        if (sep + 3 > end) return nullptr;
        const uint8_t flag = sep[1];
        data["compression_flag"] = flag;
        data["compression_method"] = sep[2];
        const uint8_t* cursor = sep + 3;
        for (const char* key : {"language_tag", "translated_keyword"}) {
            const uint8_t* nul = find_nul(cursor, end);
            if (!nul) nul = end;
            data[key] = text_of(cursor, nul);
            cursor = nul < end ? nul + 1 : end;
        }
        if (flag)
            put_inflated(data, "text", cursor, end);
        else
            data["text"] = text_of(cursor, end);
    }
    return data;
}

// The decoded contents of one PNG chunk, or null when it is not decoded.
void describe_png_chunk(const std::string& type, const uint8_t* p, uint32_t n, bool raw,
                        json& entry) {
    const uint8_t* end = p + n;
    if (type == "IHDR" && n == 13) {
        entry["data"] = {
            {"width", be32(p)},         {"height", be32(p + 4)},       {"bit_depth", p[8]},
            {"color_type", p[9]},       {"compression_method", p[10]}, {"filter_method", p[11]},
            {"interlace_method", p[12]}};
    } else if (type == "tEXt" || type == "zTXt" || type == "iTXt") {
        json data = png_text_data(type, p, end);
        if (!data.is_null()) entry["data"] = data;
    } else if (type == "eXIf") {
        std::string error;
        json data = exif_report(p, n, raw, &error);
        if (!data.empty()) entry["data"] = data;
        if (!error.empty()) entry["error"] = error;
    } else if (type == "iCCP") {
        const uint8_t* sep = find_nul(p, end);
        if (sep && sep + 2 <= end) {
            json data = {{"profile_name", text_of(p, sep)}, {"compression_method", sep[1]}};
            std::string profile, error;
            if (inflate_into(sep + 2, static_cast<size_t>(end - sep - 2), &profile, &error)) {
                data["profile_size"] = profile.size();
                if (raw)
                    data["profile_hex_preview"] = hex_preview(
                        reinterpret_cast<const uint8_t*>(profile.data()), profile.size());
            } else {
                data["decompression_error"] = error;
            }
            entry["data"] = data;
        }
    } else if (type == "gAMA" && n == 4) {
        entry["data"] = {{"gamma_times_100000", be32(p)}};
    } else if (type == "sRGB" && n == 1) {
        entry["data"] = {{"rendering_intent", p[0]}};
    } else if (type == "pHYs" && n == 9) {
        entry["data"] = {{"pixels_per_unit_x", be32(p)},
                         {"pixels_per_unit_y", be32(p + 4)},
                         {"unit_specifier", p[8]}};
    } else if (type == "tIME" && n == 7) {
        entry["data"] = {{"year", be16(p)}, {"month", p[2]},  {"day", p[3]},
                         {"hour", p[4]},    {"minute", p[5]}, {"second", p[6]}};
    } else if (type == "cHRM" && n == 32) {
        const char* keys[] = {"white_point_x", "white_point_y", "red_x",  "red_y",
                              "green_x",       "green_y",       "blue_x", "blue_y"};
        json data;
        for (int i = 0; i < 8; ++i) data[keys[i]] = be32(p + 4 * i);
        entry["data"] = data;
    } else if (raw) {
        entry["raw_hex_preview"] = hex_preview(p, n);
    }
}

json png_report(const Bytes& d, const std::string& path, bool raw) {
    json report = {{"format", "PNG"}, {"entries", json::array()}};
    size_t pos = 8;
    while (d.size() - pos >= 12) {
        const uint32_t n = be32(&d[pos]);
        const std::string type = text_of(&d[pos + 4], &d[pos + 8]);
        if (n > d.size() - pos - 12) sd::fail("%s: PNG chunk exceeds file size", path.c_str());
        const uint8_t* payload = &d[pos + 8];
        const bool structural =
            type == "IHDR" || type == "PLTE" || type == "IDAT" || type == "IEND";
        json entry = {{"entry_type", "chunk"},
                      {"name", type},
                      {"length", n},
                      {"crc", be32(payload + n)},
                      {"critical", std::isupper(static_cast<unsigned char>(type[0])) != 0},
                      {"metadata_like", !structural}};
        describe_png_chunk(type, payload, n, raw, entry);
        report["entries"].push_back(entry);
        pos += 12 + static_cast<size_t>(n);
        if (type == "IEND") return report;
    }
    sd::fail("%s: PNG missing IEND chunk", path.c_str());
}

std::string marker_name(uint8_t marker) {
    char buffer[16];
    if (marker >= 0xE0 && marker <= 0xEF) return "APP" + std::to_string(marker - 0xE0);
    if (marker == 0xFE) return "COM";
    std::snprintf(buffer, sizeof(buffer), "0x%02X", marker);
    return buffer;
}

bool starts_with(const uint8_t* p, size_t n, const char* prefix, size_t prefix_size) {
    return n >= prefix_size && std::memcmp(p, prefix, prefix_size) == 0;
}

void describe_jpeg_segment(uint8_t marker, const uint8_t* p, size_t n, bool raw, json& entry) {
    if (marker == 0xFE) {
        if (starts_with(p, n, "parameters", 11)) {
            entry["data"] = {{"label", "parameters"}, {"text", text_of(p + 11, p + n)}};
        } else {
            std::string text = text_of(p, p + n);
            while (!text.empty() && text.back() == '\0') text.pop_back();
            entry["data"] = {{"text", text}};
        }
    } else if (marker == 0xE0 && starts_with(p, n, "JFIF", 5)) {
        entry["data"] = {{"identifier", "JFIF"},
                         {"version_major", n >= 7 ? p[5] : 0},
                         {"version_minor", n >= 7 ? p[6] : 0},
                         {"density_units", n >= 8 ? p[7] : 0},
                         {"x_density", n >= 10 ? be16(p + 8) : 0},
                         {"y_density", n >= 12 ? be16(p + 10) : 0}};
    } else if (marker == 0xE1 && starts_with(p, n, "Exif\0\0", 6)) {
        std::string error;
        json data = exif_report(p + 6, n - 6, raw, &error);
        if (!data.empty()) entry["data"] = data;
        if (!error.empty()) entry["error"] = error;
    } else if (marker == 0xE1 && starts_with(p, n, "http://ns.adobe.com/xap/1.0/", 29)) {
        entry["data"] = {{"type", "XMP"}, {"xml", text_of(p + 29, p + n)}};
    } else if (marker == 0xE2 && n >= 14 && starts_with(p, n, "ICC_PROFILE", 12)) {
        json data = {{"type", "ICC_PROFILE"},
                     {"sequence_no", p[12]},
                     {"sequence_count", p[13]},
                     {"profile_size", n - 14}};
        if (raw && n > 14) data["profile_hex_preview"] = hex_preview(p + 14, n - 14);
        entry["data"] = data;
    } else if (marker == 0xEE && n >= 12 && starts_with(p, n, "Adobe", 6)) {
        entry["data"] = {{"identifier", "Adobe"},
                         {"version", be16(p + 6)},
                         {"flags0", be16(p + 8)},
                         {"flags1", be16(p + 10)},
                         {"color_transform", p[11]}};
    } else if (raw) {
        entry["raw_hex_preview"] = hex_preview(p, n);
    }
}

json jpeg_report(const Bytes& d, const std::string& path, bool raw) {
    json report = {{"format", "JPEG"}, {"entries", json::array()}};
    size_t pos = 2;
    while (pos + 1 < d.size()) {
        if (d[pos] != 0xFF) sd::fail("%s: invalid JPEG marker alignment", path.c_str());
        while (pos < d.size() && d[pos] == 0xFF) ++pos;
        if (pos >= d.size()) break;
        const uint8_t marker = d[pos++];
        if (marker == 0xD9 || marker == 0xDA) break;
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
        if (d.size() - pos < 2) sd::fail("%s: JPEG marker missing segment length", path.c_str());
        const uint32_t length = be16(&d[pos]);
        if (length < 2 || length > d.size() - pos)
            sd::fail("%s: JPEG segment exceeds file size", path.c_str());
        const size_t n = length - 2;
        json entry = {{"entry_type", "segment"},
                      {"marker", marker_name(marker)},
                      {"length", n},
                      {"metadata_like", marker == 0xFE || (marker >= 0xE0 && marker <= 0xEF)}};
        describe_jpeg_segment(marker, &d[pos + 2], n, raw, entry);
        report["entries"].push_back(entry);
        pos += length;
    }
    return report;
}

json webp_report(const Bytes& d, const std::string& path, bool raw) {
    json report = {{"format", "WEBP"}, {"entries", json::array()}};
    const uint64_t end = uint64_t{le32(&d[4])} + 8;
    if (end > d.size()) sd::fail("%s: WebP RIFF size exceeds file size", path.c_str());
    size_t pos = 12;
    while (pos + 8 <= end) {
        const std::string fourcc = text_of(&d[pos], &d[pos + 4]);
        const uint64_t n = le32(&d[pos + 4]);
        if (n > end - pos - 8) sd::fail("%s: WebP chunk exceeds file size", path.c_str());
        const uint8_t* p = &d[pos + 8];
        const bool metadata = fourcc == "XMP " || fourcc == "EXIF" || fourcc == "ICCP";
        json entry = {
            {"entry_type", "chunk"}, {"name", fourcc}, {"length", n}, {"metadata_like", metadata}};
        if (fourcc == "XMP ") {
            entry["data"] = {{"type", "XMP"}, {"xml", text_of(p, p + n)}};
        } else if (fourcc == "EXIF") {
            std::string error;
            const size_t skip = starts_with(p, n, "Exif\0\0", 6) ? 6 : 0;
            json data = exif_report(p + skip, n - skip, raw, &error);
            if (!data.empty()) entry["data"] = data;
            if (!error.empty()) entry["error"] = error;
        } else if (fourcc == "VP8X" && n >= 10) {
            entry["data"] = {{"flags", p[0]},
                             {"canvas_width", 1 + (p[4] | (p[5] << 8) | (p[6] << 16))},
                             {"canvas_height", 1 + (p[7] | (p[8] << 8) | (p[9] << 16))}};
        } else if (raw) {
            entry["raw_hex_preview"] = hex_preview(p, n);
        }
        report["entries"].push_back(entry);
        pos += 8 + static_cast<size_t>(n + (n & 1));
    }
    return report;
}

json build_report(const Bytes& d, const std::string& path, bool raw) {
    switch (sd::image::detect_format(d.data(), d.size())) {
        case sd::image::Format::Png:
            return png_report(d, path, raw);
        case sd::image::Format::Jpeg:
            return jpeg_report(d, path, raw);
        case sd::image::Format::Webp:
            return webp_report(d, path, raw);
        default:
            break;
    }
    sd::fail("%s: unsupported image format; PNG, JPEG and WebP are supported", path.c_str());
}

json visible_entries(const json& report, bool include_structural) {
    json out = report;
    out["entries"] = json::array();
    for (json entry : report["entries"]) {
        if (!include_structural && !entry.value("metadata_like", false)) continue;
        entry.erase("metadata_like");
        out["entries"].push_back(entry);
    }
    return out;
}

std::string shorten(const std::string& s, bool brief) {
    return brief && s.size() > kBriefLength ? s.substr(0, kBriefLength) + "..." : s;
}

std::string dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void print_value(std::ostream& out, const std::string& key, const json& value, int indent,
                 bool brief) {
    const std::string pad(static_cast<size_t>(indent), ' ');
    if (value.is_string()) {
        out << pad << key << ": " << shorten(value.get<std::string>(), brief) << "\n";
    } else if (value.is_primitive()) {
        out << pad << key << ": " << dump(value) << "\n";
    } else if (value.is_array()) {
        out << pad << key << ":\n";
        for (const json& item : value) {
            if (item.is_string()) {
                out << pad << "  - " << shorten(item.get<std::string>(), brief) << "\n";
            } else if (item.is_primitive()) {
                out << pad << "  - " << dump(item) << "\n";
            } else {
                out << pad << "  -\n";
                for (auto it = item.begin(); it != item.end(); ++it)
                    print_value(out, it.key(), it.value(), indent + 4, brief);
            }
        }
    } else {
        out << pad << key << ":\n";
        for (auto it = value.begin(); it != value.end(); ++it)
            print_value(out, it.key(), it.value(), indent + 2, brief);
    }
}

void print_text(std::ostream& out, const std::string& path, const json& report, bool brief) {
    out << "File: " << path << "\nFormat: " << report.value("format", "unknown") << "\n\n";
    if (report["entries"].empty()) {
        out << "No metadata entries found.\n";
        return;
    }
    for (const json& entry : report["entries"]) {
        const bool chunk = entry.value("entry_type", "") == "chunk";
        out << (chunk ? "Chunk: " : "Segment: ")
            << (chunk ? entry.value("name", "unknown") : entry.value("marker", "unknown")) << "\n";
        for (auto it = entry.begin(); it != entry.end(); ++it) {
            if (it.key() == "entry_type" || it.key() == "name" || it.key() == "marker") continue;
            print_value(out, it.key(), it.value(), 2, brief);
        }
        out << "\n";
    }
}

}  // namespace

void print_metadata_report(const std::string& path, const MetadataOptions& options,
                           std::ostream& out) {
    const Bytes bytes = sd::image::read_file_bytes(path);
    json report =
        visible_entries(build_report(bytes, path, options.include_raw), options.include_structural);
    if (options.json) {
        report["file"] = path;
        out << report.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    } else {
        print_text(out, path, report, options.brief);
    }
}

}  // namespace cli
