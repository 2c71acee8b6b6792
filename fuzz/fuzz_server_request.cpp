// The request parsers of sd-server's three APIs on arbitrary bodies: the native schemas of
// /sdcpp/v1/img_gen and /sdcpp/v1/vid_gen, OpenAI's /v1/images/generations, AUTOMATIC1111's
// txt2img and img2img, each with <sd_cpp_extra_args> blocks in its prompt. Input: K BODY,
// K one byte choosing the parser, BODY a JSON object (the routes answer anything else before a
// parser sees it). A body is parsed or refused with a RequestError (a 4xx naming the field);
// any other exception is a finding: the server would answer it 500.
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include <nlohmann/json.hpp>

#include "fuzz_server_util.h"
#include "request_error.h"
#include "requests.h"

namespace {

uint64_t touch(const server::JobSpec& spec) {
    const cli::GenerationRequest& r = spec.request;
    uint64_t sum = r.prompt.size() + r.negative_prompt.size() + r.loras.size();
    sum += static_cast<uint64_t>(r.width) * 31 + static_cast<uint64_t>(r.height);
    for (const sd::image::Image* i : {&r.init_image, &r.end_image, &r.mask_image, &r.control_image})
        sum += i->pixels.size();
    for (const auto& frames : {&r.ref_images, &r.control_frames})
        for (const sd::image::Image& i : *frames) sum += i.pixels.size();
    return sum + static_cast<uint64_t>(spec.params.sample_params.sample_steps);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const nlohmann::json body = nlohmann::json::parse(reinterpret_cast<const char*>(data) + 1,
                                                      reinterpret_cast<const char*>(data) + size,
                                                      nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) return 0;
    server::ServerLimits limits;
    limits.max_side = 256;  // images of the body are decoded: keep them small
    const server::ParseContext ctx{sd::fuzz::server_command_line(), limits};
    try {
        switch (data[0] % 5) {
            case 0:
                sd::fuzz::sink = touch(server::parse_native_request(body, ctx));
                break;
            case 1:
                sd::fuzz::sink = touch(server::parse_native_video_request(body, ctx));
                break;
            case 2:
                sd::fuzz::sink = touch(server::parse_openai_generation(body, ctx));
                break;
            default:
                sd::fuzz::sink =
                    touch(server::parse_sdapi_request(body, data[0] % 5 == 4, ctx).spec);
        }
    } catch (const server::RequestError& e) {
        if (e.status() < 400 || e.status() >= 500) std::abort();  // a refusal is the client's
    } catch (const std::exception& e) {
        std::fprintf(stderr, "finding: %s: %s\n", typeid(e).name(), e.what());
        std::abort();
    }
    return 0;
}
