// -M metadata: what an image file carries besides its pixels, as the reference program
// reports it. PNG chunks and JPEG segments (WebP chunks too, here) are listed with their
// decoded contents (text chunks, the "parameters" comment, EXIF, XMP, ICC, ...), as text or
// JSON; by default only metadata entries, with --metadata-all the structural ones too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace cli {

struct MetadataOptions {
    bool json = false;                // --metadata-format json
    bool include_raw = false;         // --metadata-raw: hex previews of undecoded payloads
    bool brief = false;               // --metadata-brief: long text values cut at 240 characters
    bool include_structural = false;  // --metadata-all
};

// Writes the report of `path` to `out`; throws sd::Error naming the file when it cannot be
// read or is not a well-formed PNG, JPEG or WebP file.
void print_metadata_report(const std::string& path, const MetadataOptions& options,
                           std::ostream& out);

}  // namespace cli
