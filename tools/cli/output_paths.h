// The file names -o gives a batch of results, as the reference program names them: a
// printf-style %d / %03d in the path numbers the images from --output-begin-idx (default
// 0); otherwise one image keeps the name and a batch gets NAME_0.EXT, NAME_1.EXT, ...; an
// extension that is not .png/.jpg/.jpeg/.jpe/.webp/.bmp gets .png appended.
#pragma once

#include <string>
#include <vector>

namespace cli {

// True when `path` holds a %d, %Nd or %0Nd (up to 3 digits) not escaped as %%.
bool has_sequence_specifier(const std::string& path);
// `pattern` with every sequence specifier replaced by `index` and %% by %.
std::string format_sequence(const std::string& pattern, int index);

// `count` output paths for -o `output`; begin_index < 0 means the default.
std::vector<std::string> output_paths(const std::string& output, int count, int begin_index);

}  // namespace cli
