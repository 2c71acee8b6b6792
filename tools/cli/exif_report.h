// EXIF (TIFF structure) decoded into JSON for -M metadata: byte order and the IFDs with
// their tags (named where known), following Exif / GPS / Interop sub-IFDs. Offsets that
// point outside the payload or loop back are reported, never followed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace cli {

// `error` is set (and the result partial or empty) when the payload is not valid TIFF.
nlohmann::json exif_report(const uint8_t* payload, size_t size, bool include_raw,
                           std::string* error);

// Up to `limit` bytes as "0a 1b ..." (with " ..." when cut).
std::string hex_preview(const uint8_t* data, size_t size, size_t limit = 64);

}  // namespace cli
