// Standard base64 (RFC 4648, '+' and '/'), as the APIs carry images.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sd {

std::string base64_encode(const uint8_t* data, size_t size);
inline std::string base64_encode(const std::vector<uint8_t>& bytes) {
    return base64_encode(bytes.data(), bytes.size());
}

// Decodes `text`, ignoring ASCII whitespace (line-wrapped input) and accepting missing
// padding; std::nullopt for any other character, misplaced '=' or a dangling final char.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view text);

}  // namespace sd
