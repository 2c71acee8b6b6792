// A request as it arrived, kept with its parsed JobSpec so that the Redis queue can send it
// to a worker, which parses it again with the same parsers (request_source.cpp) and its own
// command line's defaults; the seed the API node parsed goes along.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace server {

struct RequestSource {
    // "native", "native_video" (/sdcpp/v1/vid_gen), "openai_generation", "openai_edit" (body: the
    // form parts, contents base64), "sdapi_txt2img", "sdapi_img2img"; empty: not recorded.
    std::string kind;
    nlohmann::json body;
};

}  // namespace server
