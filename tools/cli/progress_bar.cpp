#include "progress_bar.h"

#include <unistd.h>

#include <algorithm>

#include "stable-diffusion.h"

namespace cli {
namespace {

constexpr int kBarWidth = 50;

std::string rate(float seconds) {
    char buffer[48];
    if (seconds > 1.0f || seconds <= 0.0f)
        std::snprintf(buffer, sizeof(buffer), "%.2fs/it", static_cast<double>(seconds));
    else
        std::snprintf(buffer, sizeof(buffer), "%.2fit/s", 1.0 / seconds);
    return buffer;
}

void on_progress(int step, int steps, float seconds, void* data) {
    static_cast<ProgressBar*>(data)->update(step, steps, seconds);
}

}  // namespace

std::string ProgressBar::render(int step, int steps, float seconds, bool terminal) {
    const std::string counts = std::to_string(step) + "/" + std::to_string(steps);
    if (!terminal) return "step " + counts + " - " + rate(seconds);
    const int done = steps > 0 ? std::clamp(step * kBarWidth / steps, 0, kBarWidth) : 0;
    std::string bar = "  |";
    for (int i = 0; i < kBarWidth; ++i) {
        if (i < done || (i == done && done == kBarWidth - 1))
            bar += '=';
        else if (i == done)
            bar += '>';
        else
            bar += ' ';
    }
    return bar + "| " + counts + " - " + rate(seconds);
}

void ProgressBar::update(int step, int steps, float seconds) {
    const std::string line = render(step, steps, seconds, terminal_);
    if (terminal_) {
        std::fprintf(out_, "\r%s\033[K", line.c_str());
        if (step >= steps) std::fputc('\n', out_);
    } else {
        std::fprintf(out_, "%s\n", line.c_str());
    }
    std::fflush(out_);
}

ProgressBar::~ProgressBar() {
    if (installed_) sd_set_progress_callback(nullptr, nullptr);
}

void ProgressBar::install() {
    sd_set_progress_callback(on_progress, this);
    installed_ = true;
}

bool is_terminal(std::FILE* out) {
    return ::isatty(::fileno(out)) != 0;
}

}  // namespace cli
