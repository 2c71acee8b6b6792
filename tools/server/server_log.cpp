#include "server_log.h"

#include "log_output.h"
#include "stable-diffusion.h"

namespace server {
namespace {

thread_local ErrorCapture* t_capture = nullptr;

void library_log(sd_log_level_t level, const char* text, void*) {
    cli::print_log(level, text);
    if (level == SD_LOG_ERROR && text && t_capture) t_capture->add(text);
}

}  // namespace

void install_server_log() {
    sd_set_log_callback(library_log, nullptr);
}

ErrorCapture::ErrorCapture() : previous_(t_capture) {
    t_capture = this;
}

ErrorCapture::~ErrorCapture() {
    t_capture = previous_;
}

void ErrorCapture::add(const std::string& message) {
    std::string m = message;
    while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.pop_back();
    if (m.empty() || text_.size() > 4096) return;
    if (!text_.empty()) text_ += "; ";
    text_ += m;
}

}  // namespace server
