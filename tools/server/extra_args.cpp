#include "extra_args.h"

#include "request_error.h"

namespace server {
namespace {

constexpr const char kOpen[] = "<sd_cpp_extra_args>";
constexpr const char kClose[] = "</sd_cpp_extra_args>";

}  // namespace

ExtraArgs extract_extra_args(const std::string& prompt, const std::string& field) {
    ExtraArgs out;
    const size_t open = prompt.find(kOpen);
    if (open == std::string::npos) {
        if (prompt.find(kClose) != std::string::npos)
            throw bad_field(field, "</sd_cpp_extra_args> without <sd_cpp_extra_args>");
        out.prompt = prompt;
        return out;
    }
    const size_t body = open + sizeof(kOpen) - 1;
    const size_t close = prompt.find(kClose, body);
    if (close == std::string::npos) throw bad_field(field, "<sd_cpp_extra_args> is not closed");
    out.json_text = prompt.substr(body, close - body);
    out.prompt = prompt.substr(0, open) + prompt.substr(close + sizeof(kClose) - 1);
    if (out.prompt.find(kOpen) != std::string::npos || out.prompt.find(kClose) != std::string::npos)
        throw bad_field(field, "more than one <sd_cpp_extra_args> block");
    return out;
}

}  // namespace server
