// The OpenAI images API (synchronous): POST /v1/images/generations (JSON),
// POST /v1/images/edits (multipart: prompt, image / image[], mask, n, size, ...),
// GET /v1/models.
#include <ctime>

#include "http_json.h"
#include "request_error.h"
#include "request_replay.h"
#include "requests.h"
#include "routes.h"

namespace server {
namespace {

using nlohmann::json;

json images_response(const JobSnapshot& done) {
    json data = json::array();
    for (const ResultImage& image : *done.images)
        data.push_back({{"b64_json", image.b64}, {"revised_prompt", done.spec->request.prompt}});
    return {{"created", static_cast<int64_t>(std::time(nullptr))},
            {"data", data},
            {"output_format", output_format_name(done.spec->output.format)}};
}

std::vector<FormPart> form_parts(const httplib::Request& req) {
    std::vector<FormPart> parts;
    for (const auto& [name, part] : req.files)
        parts.push_back({part.name, part.content, part.filename, part.content_type});
    return parts;
}

}  // namespace

void register_openai_routes(httplib::Server& svr, ServerState& state) {
    svr.Get(
        "/v1/models", guarded([](const httplib::Request&, httplib::Response& res) {
            json model = {
                {"id", "sd-cpp-local"}, {"object", "model"}, {"created", 0}, {"owned_by", "local"}};
            send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
        }));

    svr.Post("/v1/images/generations",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 json body = parse_body(req);
                 JobSpec spec = parse_openai_generation(body, state.parse_context());
                 spec.source = {"openai_generation", std::move(body)};
                 send_json(res, 200,
                           images_response(generate_and_wait(state, std::move(spec), "openai")));
             }));

    svr.Post("/v1/images/edits",
             guarded([&state](const httplib::Request& req, httplib::Response& res) {
                 if (!req.is_multipart_form_data())
                     throw bad_request("invalid_multipart",
                                       "expected a multipart/form-data body (prompt, image, ...)");
                 const std::vector<FormPart> parts = form_parts(req);
                 JobSpec spec = parse_openai_edit(parts, state.parse_context());
                 spec.source = {"openai_edit", form_parts_json(parts)};
                 send_json(res, 200,
                           images_response(generate_and_wait(state, std::move(spec), "openai")));
             }));
}

}  // namespace server
