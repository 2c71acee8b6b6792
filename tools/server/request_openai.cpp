// The OpenAI images API: POST /v1/images/generations (JSON) and /v1/images/edits
// (multipart), with native fields through <sd_cpp_extra_args> in the prompt.
#include "image_payload.h"
#include "request_common.h"
#include "request_error.h"
#include "requests.h"

namespace server {
namespace {

using nlohmann::json;

void check_response_format(const std::string& value, const std::string& field) {
    if (value == "b64_json") return;
    if (value == "url")
        throw bad_field(field, "only b64_json is supported (this server does not host image URLs)");
    throw bad_field(field, "expected b64_json, got '" + value.substr(0, 40) + "'");
}

void require_prompt(const std::string& prompt, const std::string& field) {
    if (prompt.find_first_not_of(" \t\r\n") == std::string::npos)
        throw bad_field(field, "required (a non-empty string)");
}

const FormPart* find_part(const std::vector<FormPart>& form, const std::string& name) {
    for (const FormPart& part : form)
        if (part.name == name) return &part;
    return nullptr;
}

std::vector<const FormPart*> find_parts(const std::vector<FormPart>& form,
                                        const std::string& name) {
    std::vector<const FormPart*> out;
    for (const FormPart& part : form)
        if (part.name == name) out.push_back(&part);
    return out;
}

}  // namespace

JobSpec parse_openai_generation(const json& body, const ParseContext& ctx) {
    const FieldReader f(body);
    cli::CliParams p = ctx.defaults;
    RequestInputs inputs;
    OutputOptions output;
    auto prompt = f.string("prompt");
    if (!prompt) throw bad_field("prompt", "required (a non-empty string)");
    require_prompt(*prompt, "prompt");
    // Fields OpenAI defines that change nothing here; their types are still checked.
    for (const char* key : {"model", "quality", "style", "user", "background", "moderation"})
        f.string(key);
    if (auto n = f.integer("n", 1, ctx.limits.max_batch)) p.batch_count = *n;
    if (auto size = f.string("size")) {
        if (auto wh = parse_size(*size, "size", ctx.limits)) {
            p.width = wh->first;
            p.height = wh->second;
        }
    }
    if (auto v = f.string("response_format")) check_response_format(*v, "response_format");
    if (auto v = f.string("output_format")) apply_output_format(*v, "output_format", output);
    if (auto v = f.integer("output_compression", 0, 100)) output.compression = *v;
    std::string text = *prompt;
    apply_extra_args(text, "prompt", ctx, p, inputs, output);
    require_prompt(p.prompt, "prompt");
    return finalize_request(std::move(p), std::move(inputs), output, ctx);
}

JobSpec parse_openai_edit(const std::vector<FormPart>& form, const ParseContext& ctx) {
    cli::CliParams p = ctx.defaults;
    RequestInputs inputs;
    OutputOptions output;
    const FormPart* prompt = find_part(form, "prompt");
    if (!prompt) throw bad_field("prompt", "required (a non-empty form field)");
    require_prompt(prompt->content, "prompt");
    std::vector<const FormPart*> images = find_parts(form, "image[]");
    const char* image_field = "image[]";
    if (images.empty()) {
        images = find_parts(form, "image");
        image_field = "image";
    }
    if (images.empty()) throw bad_field("image", "required (an image file)");
    if (images.size() > 1 && !ctx.ref_images)
        throw bad_field(image_field,
                        "one image: this model takes no reference images for the others");
    // The first image is the init image; an edit model takes every image as a reference too.
    for (size_t i = 0; i < images.size(); ++i) {
        const std::string& bytes = images[i]->content;
        sd::image::Image image = decode_image_bytes(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                    bytes.size(), 3, image_field);
        if (i == 0) inputs.init_image = image;
        if (ctx.ref_images) inputs.ref_images.push_back(std::move(image));
    }
    inputs.init_image_field = image_field;
    p.width = p.height = -1;  // the image's size unless `size` says otherwise
    if (const FormPart* mask = find_part(form, "mask")) {
        inputs.mask_image =
            decode_image_bytes(reinterpret_cast<const uint8_t*>(mask->content.data()),
                               mask->content.size(), 1, "mask");
    }
    if (const FormPart* n = find_part(form, "n"))
        p.batch_count = parse_int_text(n->content, "n", 1, ctx.limits.max_batch);
    if (const FormPart* size = find_part(form, "size")) {
        if (auto wh = parse_size(size->content, "size", ctx.limits)) {
            p.width = wh->first;
            p.height = wh->second;
        }
    }
    if (const FormPart* v = find_part(form, "response_format"))
        check_response_format(v->content, "response_format");
    if (const FormPart* v = find_part(form, "output_format"))
        apply_output_format(v->content, "output_format", output);
    if (const FormPart* v = find_part(form, "output_compression"))
        output.compression = parse_int_text(v->content, "output_compression", 0, 100);
    std::string text = prompt->content;
    apply_extra_args(text, "prompt", ctx, p, inputs, output);
    require_prompt(p.prompt, "prompt");
    return finalize_request(std::move(p), std::move(inputs), output, ctx);
}

}  // namespace server
