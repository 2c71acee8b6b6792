#include "help_layout.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace cli {

namespace {

constexpr size_t kDefaultWidth = 100;
constexpr size_t kMinWidth = 60;

size_t terminal_columns() {
    winsize ws{};
    if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    if (const char* columns = std::getenv("COLUMNS")) {
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && n > 0) return static_cast<size_t>(n);
    }
    return kDefaultWidth;
}

// `text` split into lines of at most `width` characters at spaces; a word longer than a line
// (a path, a choice list without spaces) stands alone on its line.
std::vector<std::string> wrap(const std::string& text, size_t width) {
    std::vector<std::string> lines;
    std::istringstream words(text);
    std::string word, line;
    while (words >> word) {
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty() || lines.empty()) lines.push_back(line);
    return lines;
}

}  // namespace

size_t help_width() {
    // Very wide terminals still get lines a reader can follow.
    return std::clamp(terminal_columns(), kMinWidth, size_t{160});
}

void print_help_row(std::ostream& out, const std::string& names, const std::string& help,
                    size_t names_width, size_t width) {
    const size_t indent = names_width + 4;
    const size_t text_width = width > indent + 20 ? width - indent : 20;
    out << "  " << names;
    if (names.size() > names_width)
        out << "\n" << std::string(indent, ' ');
    else
        out << std::string(names_width - names.size() + 2, ' ');
    const std::vector<std::string> lines = wrap(help, text_width);
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out << std::string(indent, ' ');
        out << lines[i] << "\n";
    }
}

}  // namespace cli
