// Sampling progress: on a terminal a bar redrawn in place with s/it (or it/s when a step
// takes under a second); otherwise one plain line per step.
#pragma once

#include <cstdio>
#include <string>

namespace cli {

class ProgressBar {
  public:
    ProgressBar(std::FILE* out, bool terminal) : out_(out), terminal_(terminal) {}
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    // `step` of `steps` done, the last step having taken `seconds`.
    void update(int step, int steps, float seconds);
    // The text update() prints for a step, without the carriage return.
    static std::string render(int step, int steps, float seconds, bool terminal);

    // Registers this bar as the library's progress callback (until destroyed).
    void install();

  private:
    std::FILE* out_;
    bool terminal_;
    bool installed_ = false;
};

// Whether `out` is an interactive terminal.
bool is_terminal(std::FILE* out);

}  // namespace cli
