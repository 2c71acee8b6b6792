// The XMP packet holding the parameters text, in the layout the reference program's WebP
// writer uses (an sdcpp:parameters element), and reading it back.
#include <string>

#include "image/codecs.h"

namespace sd::image::detail {
namespace {

const char kOpenTag[] = "<sdcpp:parameters>";
const char kCloseTag[] = "</sdcpp:parameters>";

std::string xml_escape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

void append_utf8(uint32_t cp, std::string* out) {
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) {
        *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        *out += static_cast<char>(0xC0 | (cp >> 6));
        *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out += static_cast<char>(0xE0 | (cp >> 12));
        *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        *out += static_cast<char>(0xF0 | (cp >> 18));
        *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// One entity starting at text[i] == '&'; returns the characters consumed (0: not one).
size_t decode_entity(const std::string& text, size_t i, std::string* out) {
    static const struct {
        const char* name;
        char value;
    } named[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (const auto& e : named) {
        size_t n = std::char_traits<char>::length(e.name);
        if (text.compare(i, n, e.name) == 0) {
            *out += e.value;
            return n;
        }
    }
    if (text.compare(i, 2, "&#") != 0) return 0;
    size_t semi = text.find(';', i);
    if (semi == std::string::npos || semi - i > 10) return 0;
    const bool hex = i + 2 < text.size() && (text[i + 2] == 'x' || text[i + 2] == 'X');
    const std::string digits = text.substr(i + (hex ? 3 : 2), semi - i - (hex ? 3 : 2));
    if (digits.empty()) return 0;
    uint32_t cp = 0;
    for (char c : digits) {
        int d = c >= '0' && c <= '9'          ? c - '0'
                : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                              : -1;
        if (d < 0) return 0;
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
    }
    append_utf8(cp, out);
    return semi - i + 1;
}

std::string xml_unescape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        size_t n = text[i] == '&' ? decode_entity(text, i, &out) : 0;
        if (n == 0) out += text[i++];
        i += n;
    }
    return out;
}

}  // namespace

std::string parameters_xmp(const std::string& parameters) {
    return "<?xpacket begin=\"\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n"
           "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n"
           "  <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n"
           "    <rdf:Description "
           "xmlns:sdcpp=\"https://github.com/leejet/stable-diffusion.cpp/ns/1.0/\">\n"
           "      " +
           std::string(kOpenTag) + xml_escape(parameters) + kCloseTag +
           "\n"
           "    </rdf:Description>\n"
           "  </rdf:RDF>\n"
           "</x:xmpmeta>\n"
           "<?xpacket end=\"w\"?>";
}

std::string parameters_from_xmp(const std::string& xmp) {
    size_t open = xmp.find(kOpenTag);
    if (open == std::string::npos) return "";
    size_t begin = open + sizeof(kOpenTag) - 1;
    size_t close = xmp.find(kCloseTag, begin);
    if (close == std::string::npos) return "";
    return xml_unescape(xmp.substr(begin, close - begin));
}

}  // namespace sd::image::detail
