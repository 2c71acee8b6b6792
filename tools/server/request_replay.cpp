#include "request_replay.h"

#include "base/base64.h"
#include "request_error.h"

namespace server {

using nlohmann::json;

json form_parts_json(const std::vector<FormPart>& parts) {
    json out = json::array();
    for (const FormPart& p : parts) {
        const auto* data = reinterpret_cast<const uint8_t*>(p.content.data());
        out.push_back({{"name", p.name},
                       {"content_b64", sd::base64_encode(data, p.content.size())},
                       {"filename", p.filename},
                       {"content_type", p.content_type}});
    }
    return out;
}

namespace {

std::vector<FormPart> form_parts_from_json(const json& parts) {
    std::vector<FormPart> out;
    for (const json& p : parts) {
        const auto bytes = sd::base64_decode(p.at("content_b64").get<std::string>());
        if (!bytes) throw bad_request("invalid_queued_request", "a queued form part is not base64");
        out.push_back({p.at("name").get<std::string>(), std::string(bytes->begin(), bytes->end()),
                       p.at("filename").get<std::string>(),
                       p.at("content_type").get<std::string>()});
    }
    return out;
}

JobSpec parse_by_kind(const RequestSource& source, const ParseContext& ctx) {
    const std::string& kind = source.kind;
    if (kind == "native") return parse_native_request(source.body, ctx);
    if (kind == "native_video") return parse_native_video_request(source.body, ctx);
    if (kind == "openai_generation") return parse_openai_generation(source.body, ctx);
    if (kind == "openai_edit") return parse_openai_edit(form_parts_from_json(source.body), ctx);
    if (kind == "sdapi_txt2img" || kind == "sdapi_img2img")
        return parse_sdapi_request(source.body, kind == "sdapi_img2img", ctx).spec;
    throw bad_request("invalid_queued_request", "unknown queued request kind '" + kind + "'");
}

}  // namespace

JobSpec replay_request(const RequestSource& source, int64_t seed, const ParseContext& ctx) {
    JobSpec spec = parse_by_kind(source, ctx);
    spec.request.seed = seed;
    return spec;
}

}  // namespace server
