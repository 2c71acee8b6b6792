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

// The form parts as form_parts_json wrote them; a queue holds what any process wrote there.
std::vector<FormPart> form_parts_from_json(const json& parts) {
    if (!parts.is_array())
        throw bad_request("invalid_queued_request", "the queued form parts are not a list");
    auto text = [](const json& part, const char* key) {
        auto it = part.find(key);
        if (it == part.end() || !it->is_string())
            throw bad_request("invalid_queued_request",
                              std::string("a queued form part has no text \"") + key + "\"");
        return it->get<std::string>();
    };
    std::vector<FormPart> out;
    for (const json& p : parts) {
        if (!p.is_object())
            throw bad_request("invalid_queued_request", "a queued form part is not an object");
        const auto bytes = sd::base64_decode(text(p, "content_b64"));
        if (!bytes) throw bad_request("invalid_queued_request", "a queued form part is not base64");
        out.push_back({text(p, "name"), std::string(bytes->begin(), bytes->end()),
                       text(p, "filename"), text(p, "content_type")});
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
