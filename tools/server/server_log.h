// The server's log: its own messages and the library's go through sd-cli's printer
// ("[INFO ] ..."); the library's error messages are also collected for the job running on
// the current thread, so a failed job reports why.
#pragma once

#include <string>

namespace server {

// Routes the library's log through the printer (call once, after cli::set_log_settings).
void install_server_log();

// Collects the library's error messages logged on this thread while it lives.
class ErrorCapture {
  public:
    ErrorCapture();
    ~ErrorCapture();
    ErrorCapture(const ErrorCapture&) = delete;
    ErrorCapture& operator=(const ErrorCapture&) = delete;

    // The messages joined with "; " (empty when none).
    const std::string& text() const { return text_; }
    void add(const std::string& message);

  private:
    ErrorCapture* previous_;
    std::string text_;
};

}  // namespace server
