// "<sd_cpp_extra_args>{JSON}</sd_cpp_extra_args>" inside a prompt: the native API's fields
// carried through the OpenAI and AUTOMATIC1111 APIs, as the reference server reads them.
#pragma once

#include <optional>
#include <string>

namespace server {

struct ExtraArgs {
    std::string prompt;                    // the prompt without the block
    std::optional<std::string> json_text;  // the block's content, when there was one
};

// Takes the block out of `prompt`. An unterminated block or a second block is a
// RequestError naming `field`.
ExtraArgs extract_extra_args(const std::string& prompt, const std::string& field);

}  // namespace server
