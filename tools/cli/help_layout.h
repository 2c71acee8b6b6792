// The two-column layout of -h (sd-cli and sd-server): option names on the left, their help
// word-wrapped to the terminal's width on the right.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

namespace cli {

// The width -h wraps to: the terminal's columns when stdout is one, else $COLUMNS, else 100;
// never below 60.
size_t help_width();

// One option: "  NAMES  HELP", the help wrapped at spaces to `width` columns and indented to
// `names_width` + 4; names longer than `names_width` get a line of their own.
void print_help_row(std::ostream& out, const std::string& names, const std::string& help,
                    size_t names_width, size_t width);

}  // namespace cli
