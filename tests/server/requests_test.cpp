// The three APIs' request parsers: defaults, field mapping, and a RequestError naming the
// field for each wrong one.
#include "requests.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/base64.h"
#include "cli_options.h"
#include "io/tensor_writer.h"
#include "request_error.h"
#include "request_test_util.h"

namespace server {
namespace {

using nlohmann::json;

using test::defaults_from;
using test::png_b64;

template <class F>
void expect_field_error(F f, const std::string& field) {
    test::expect_request_error(f, field);
}

class ServerRequests : public testing::Test {
  protected:
    cli::CliParams defaults = defaults_from(
        {"-m", "model.safetensors", "--steps", "12", "-W", "256", "-H", "256", "--cfg-scale", "5"});
    ParseContext ctx{defaults, ServerLimits{}};
};

TEST_F(ServerRequests, NativeKeepsTheCommandLineDefaults) {
    JobSpec spec = parse_native_request(json::parse(R"({"prompt": "a cat"})"), ctx);
    EXPECT_EQ(spec.request.prompt, "a cat");
    EXPECT_EQ(spec.params.sample_params.sample_steps, 12);
    EXPECT_FLOAT_EQ(spec.params.sample_params.guidance.txt_cfg, 5.f);
    EXPECT_EQ(spec.request.width, 256);
    EXPECT_EQ(spec.request.seed, 42);
    EXPECT_EQ(spec.output.format, sd::image::Format::Png);
    EXPECT_TRUE(spec.request.mask_image.empty());  // no mask: the library repaints everything
}

TEST_F(ServerRequests, NativeAppliesEveryGroupOfFields) {
    JobSpec spec = parse_native_request(json::parse(R"({
        "prompt": "p", "negative_prompt": "n", "width": 64, "height": 128, "seed": 7,
        "batch_count": 3, "clip_skip": 2, "strength": 0.5,
        "sample_params": {"sample_method": "dpm++2m", "scheduler": "karras", "sample_steps": 3,
                          "eta": 0.5, "guidance": {"txt_cfg": 1.5, "slg": {"layers": [1, 2]}}},
        "vae_tiling_params": {"enabled": true, "tile_size_x": 32, "target_overlap": 0.25},
        "output_format": "webp", "output_compression": 80, "embed_image_metadata": false})"),
                                        ctx);
    const cli::CliParams& p = spec.params;
    EXPECT_EQ(spec.request.negative_prompt, "n");
    EXPECT_EQ(spec.request.width, 64);
    EXPECT_EQ(spec.request.height, 128);
    EXPECT_EQ(spec.request.seed, 7);
    EXPECT_EQ(p.batch_count, 3);
    EXPECT_EQ(p.clip_skip, 2);
    EXPECT_FLOAT_EQ(p.strength, 0.5f);
    EXPECT_EQ(p.sample_params.sample_method, DPMPP2M_SAMPLE_METHOD);
    EXPECT_EQ(p.sample_params.scheduler, KARRAS_SCHEDULER);
    EXPECT_EQ(p.sample_params.sample_steps, 3);
    EXPECT_FLOAT_EQ(p.sample_params.eta, 0.5f);
    EXPECT_FLOAT_EQ(p.sample_params.guidance.txt_cfg, 1.5f);
    EXPECT_EQ(p.skip_layers, (std::vector<int>{1, 2}));
    EXPECT_TRUE(p.vae_tiling_params.enabled);
    EXPECT_EQ(p.vae_tiling_params.tile_size_x, 32);
    EXPECT_EQ(spec.output.format, sd::image::Format::Webp);
    EXPECT_EQ(spec.output.compression, 80);
    EXPECT_FALSE(spec.output.embed_metadata);
}

TEST_F(ServerRequests, NativeAcceptsTheReferenceApiExampleBody) {
    // The request example of the reference server's api.md, as is.
    const json body = json::parse(R"({
      "prompt": "a cat sitting on a chair", "negative_prompt": "", "clip_skip": -1,
      "width": 1024, "height": 1024, "strength": 0.75, "seed": -1, "batch_count": 1,
      "auto_resize_ref_image": true, "increase_ref_index": false, "control_strength": 0.9,
      "ip_adapter_strength": 1.0, "embed_image_metadata": true,
      "init_image": null, "ref_images": [], "mask_image": null, "control_image": null,
      "ip_adapter_image": null,
      "sample_params": {"scheduler": "discrete", "sample_method": "euler_a", "sample_steps": 28,
        "eta": 1.0, "shifted_timestep": 0, "custom_sigmas": [], "flow_shift": 0.0,
        "guidance": {"txt_cfg": 7.0, "img_cfg": 7.0, "distilled_guidance": 3.5,
          "slg": {"layers": [7, 8, 9], "layer_start": 0.01, "layer_end": 0.2, "scale": 0.0}}},
      "lora": [],
      "hires": {"enabled": false, "upscaler": "Latent", "scale": 2.0, "target_width": 0,
        "target_height": 0, "steps": 0, "denoising_strength": 0.7, "custom_sigmas": [],
        "upscale_tile_size": 128},
      "vae_tiling_params": {"enabled": false, "temporal_tiling": false, "tile_size_x": 0,
        "tile_size_y": 0, "target_overlap": 0.5, "rel_size_x": 0.0, "rel_size_y": 0.0,
        "extra_tiling_args": ""},
      "cache_mode": "disabled", "cache_option": "", "scm_mask": "", "scm_policy_dynamic": true,
      "output_format": "png", "output_compression": 100})");
    JobSpec spec = parse_native_request(body, ctx);
    EXPECT_EQ(spec.request.width, 1024);
    EXPECT_EQ(spec.request.seed, -1);  // drawn by the library when the job runs
    EXPECT_EQ(spec.params.sample_params.sample_method, EULER_A_SAMPLE_METHOD);
    EXPECT_EQ(spec.params.sample_params.sample_steps, 28);
}

TEST_F(ServerRequests, NativeNamesEachWrongField) {
    auto parse = [&](const char* text) { parse_native_request(json::parse(text), ctx); };
    expect_field_error([&] { parse(R"({"prompt": 5})"); }, "prompt");
    expect_field_error([&] { parse(R"({"width": 0})"); }, "width");
    expect_field_error([&] { parse(R"({"height": 100000})"); }, "height");
    expect_field_error([&] { parse(R"({"batch_count": 9})"); }, "batch_count");
    expect_field_error([&] { parse(R"({"seed": "42"})"); }, "seed");
    expect_field_error([&] { parse(R"({"sample_params": {"sample_steps": 0}})"); },
                       "sample_params.sample_steps");
    expect_field_error([&] { parse(R"({"sample_params": {"sample_method": "magic"}})"); },
                       "sample_params.sample_method");
    expect_field_error([&] { parse(R"({"sample_params": {"guidance": {"txt_cfg": "high"}}})"); },
                       "sample_params.guidance.txt_cfg");
    expect_field_error([&] { parse(R"({"sample_params": []})"); }, "sample_params");
    expect_field_error([&] { parse(R"({"init_image": "not base64!"})"); }, "init_image");
    expect_field_error([&] { parse(R"({"init_image": "aGVsbG8="})"); }, "init_image");
    expect_field_error([&] { parse(R"({"output_format": "gif"})"); }, "output_format");
    expect_field_error([&] { parse(R"({"output_compression": 101})"); }, "output_compression");
    expect_field_error([&] { parse(R"({"lora": [{"path": "../../etc/passwd"}]})"); },
                       "lora[0].path");
    expect_field_error([&] { parse(R"({"lora": [{"multiplier": 1}]})"); }, "lora[0].path");
    expect_field_error([&] { parse(R"({"cache_mode": "turbo"})"); }, "cache_mode");
    expect_field_error([&] { parse(R"({"cache_mode": "ucache", "cache_option": "bogus=1"})"); },
                       "cache_option");
    expect_field_error([&] { parse(R"({"hires": {"enabled": true, "upscaler": "Magic"}})"); },
                       "hires.upscaler");
    expect_field_error([&] { parse(R"({"ip_adapter_image": "aGVsbG8="})"); }, "ip_adapter_image");
    expect_field_error(
        [&] {
            parse_native_request(json{{"mask_image", png_b64(64, 64, 255, 1)}}, ctx);
        },
        "mask_image");
}

TEST_F(ServerRequests, NativeSizeComesFromTheInitImageWhenNotGiven) {
    cli::CliParams open_size = defaults_from({"-m", "model.safetensors"});
    ParseContext open{open_size, ServerLimits{}};
    json body = {{"init_image", "data:image/png;base64," + png_b64(96, 64)},
                 {"mask_image", png_b64(96, 64, 255, 1)}};
    JobSpec spec = parse_native_request(body, open);
    EXPECT_EQ(spec.request.width, 96);
    EXPECT_EQ(spec.request.height, 64);
    EXPECT_EQ(spec.request.init_image.width, 96u);
    EXPECT_EQ(spec.request.mask_image.channels, 1u);
    // A size outside the server's limits names the image; an off-grid one is the library's
    // to align (to 128x64 here).
    json small = {{"init_image", png_b64(32, 64)}};
    expect_field_error([&] { parse_native_request(small, open); }, "init_image");
    json odd = {{"init_image", png_b64(100, 64)}};
    EXPECT_EQ(parse_native_request(odd, open).request.width, 100);
    // With a size given, the images stay as they are: the library fits them to the size.
    body["width"] = 64;
    body["height"] = 64;
    spec = parse_native_request(body, open);
    EXPECT_EQ(spec.request.width, 64);
    EXPECT_EQ(spec.request.init_image.width, 96u);
    EXPECT_EQ(spec.request.mask_image.width, 96u);
}

TEST_F(ServerRequests, LoraFilesResolveInsideTheLoraFolder) {
    const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "server_loras";
    std::filesystem::create_directories(dir / "style");
    const sd::Tensor t = sd::Tensor::zeros({2, 4});
    const auto lora_part = [t](const std::string& name) {
        return sd::OutputTensor{name, sd::DType::F32, t.shape(), [t] { return t; }};
    };
    sd::write_safetensors((dir / "style" / "ink.safetensors").string(),
                          {lora_part("lora_unet_a.lora_down.weight")});
    sd::write_safetensors((dir / "ink.safetensors").string(),
                          {lora_part("lora_te_b.lora_up.weight")});
    sd::write_safetensors((dir / "cut.safetensors").string(),
                          {lora_part("lora_te_b.lora_up.weight")});
    std::filesystem::resize_file(dir / "cut.safetensors",
                                 std::filesystem::file_size(dir / "cut.safetensors") - 8);
    cli::CliParams with_dir = defaults;
    with_dir.lora_model_dir = dir.string();
    ParseContext c{with_dir, ServerLimits{}};
    JobSpec spec = parse_native_request(
        json::parse(R"({"lora": [{"path": "style/ink", "multiplier": 0.5}]})"), c);
    ASSERT_EQ(spec.request.loras.size(), 1u);
    EXPECT_EQ(spec.request.loras[0].path, (dir / "style" / "ink.safetensors").string());
    EXPECT_FLOAT_EQ(spec.request.loras[0].multiplier, 0.5f);
    expect_field_error(
        [&] { parse_native_request(json::parse(R"({"lora": [{"path": "nope"}]})"), c); },
        "lora[0].path");
    // A truncated LoRA file is the request's fault (400), not a failed generation.
    expect_field_error(
        [&] { parse_native_request(json::parse(R"({"lora": [{"path": "cut"}]})"), c); },
        "lora[0].path");
    // Prompt tags (the webui's way) name files of the LoRA folder too.
    spec = parse_native_request(json::parse(R"({"prompt": "a <lora:ink:0.7> cat"})"), c);
    EXPECT_EQ(spec.request.prompt, "a  cat");
    ASSERT_EQ(spec.request.loras.size(), 1u);
    EXPECT_EQ(spec.request.loras[0].path, (dir / "ink.safetensors").string());
    EXPECT_FLOAT_EQ(spec.request.loras[0].multiplier, 0.7f);
    expect_field_error(
        [&] { parse_native_request(json::parse(R"({"prompt": "<lora:nope:1> cat"})"), c); },
        "prompt");
}

TEST_F(ServerRequests, OpenAiGenerationReadsItsFieldsAndExtraArgs) {
    const std::string body =
        R"({"model": "dall-e-3", "prompt": "a cat <sd_cpp_extra_args>{\"seed\": 9, )"
        R"(\"sample_params\": {\"sample_steps\": 2}}</sd_cpp_extra_args>", "n": 2, )"
        R"("size": "128x64", "response_format": "b64_json", "output_format": "jpeg", )"
        R"("quality": "standard"})";
    JobSpec spec = parse_openai_generation(json::parse(body), ctx);
    EXPECT_EQ(spec.request.prompt, "a cat ");
    EXPECT_EQ(spec.request.seed, 9);
    EXPECT_EQ(spec.params.sample_params.sample_steps, 2);
    EXPECT_EQ(spec.params.batch_count, 2);
    EXPECT_EQ(spec.request.width, 128);
    EXPECT_EQ(spec.request.height, 64);
    EXPECT_EQ(spec.output.format, sd::image::Format::Jpeg);
    auto parse = [&](const char* text) { parse_openai_generation(json::parse(text), ctx); };
    expect_field_error([&] { parse(R"({"n": 1})"); }, "prompt");
    expect_field_error([&] { parse(R"({"prompt": "   "})"); }, "prompt");
    expect_field_error([&] { parse(R"({"prompt": "x", "size": "big"})"); }, "size");
    expect_field_error([&] { parse(R"({"prompt": "x", "size": "4096x4096"})"); }, "size");
    expect_field_error([&] { parse(R"({"prompt": "x", "n": 0})"); }, "n");
    expect_field_error([&] { parse(R"({"prompt": "x", "response_format": "url"})"); },
                       "response_format");
    expect_field_error([&] { parse(R"({"prompt": "x", "model": 3})"); }, "model");
    expect_field_error(
        [&] { parse(R"({"prompt": "x <sd_cpp_extra_args>{bad json</sd_cpp_extra_args>"})"); },
        "sd_cpp_extra_args");
    expect_field_error(
        [&] { parse(R"({"prompt": "x <sd_cpp_extra_args>{\"seed\": []}</sd_cpp_extra_args>"})"); },
        "sd_cpp_extra_args.seed");
}

TEST_F(ServerRequests, OpenAiEditTakesTheImageSizeAndMask) {
    const std::vector<uint8_t> png_bytes = *sd::base64_decode(png_b64(80, 64));
    const std::vector<uint8_t> mask_bytes = *sd::base64_decode(png_b64(80, 64, 255, 1));
    const std::string png(png_bytes.begin(), png_bytes.end());
    const std::string mask(mask_bytes.begin(), mask_bytes.end());
    std::vector<FormPart> form = {{"prompt", "a cat", "", ""},
                                  {"image", png, "cat.png", "image/png"},
                                  {"mask", mask, "mask.png", "image/png"},
                                  {"n", "2", "", ""}};
    JobSpec spec = parse_openai_edit(form, ctx);
    EXPECT_EQ(spec.request.width, 80);
    EXPECT_EQ(spec.request.height, 64);
    EXPECT_FALSE(spec.request.init_image.empty());
    EXPECT_EQ(spec.params.batch_count, 2);
    expect_field_error([&] { parse_openai_edit({{"prompt", "x", "", ""}}, ctx); }, "image");
    expect_field_error(
        [&] {
            parse_openai_edit({{"prompt", "x", "", ""}, {"image", "GIF89a", "a.gif", ""}}, ctx);
        },
        "image");
    form[3].content = "two";
    expect_field_error([&] { parse_openai_edit(form, ctx); }, "n");
}

// Reference images, as the reference server takes them: every image[] of an edit (the first
// also the init image) when the model takes references, sdapi's extra_images, the native
// ref_images with ref_image_args. A model without references keeps one edit image.
TEST_F(ServerRequests, ReferenceImagesFromEachApi) {
    const std::vector<uint8_t> a = *sd::base64_decode(png_b64(80, 64, 10));
    const std::vector<uint8_t> b = *sd::base64_decode(png_b64(32, 48, 200));
    const std::vector<FormPart> form = {
        {"prompt", "make it red", "", ""},
        {"image[]", std::string(a.begin(), a.end()), "a.png", "image/png"},
        {"image[]", std::string(b.begin(), b.end()), "b.png", "image/png"}};
    expect_field_error([&] { parse_openai_edit(form, ctx); }, "image[]");
    ParseContext edit_model = ctx;
    edit_model.ref_images = true;
    JobSpec edit = parse_openai_edit(form, edit_model);
    ASSERT_EQ(edit.request.ref_images.size(), 2u);
    EXPECT_EQ(edit.request.ref_images[1].width, 32u);
    EXPECT_EQ(edit.request.init_image.width, 80u);
    EXPECT_EQ(edit.request.width, 80);
    EXPECT_EQ(parse_openai_edit({form[0], form[1]}, edit_model).request.ref_images.size(), 1u);
    EXPECT_TRUE(parse_openai_edit({form[0], form[1]}, ctx).request.ref_images.empty());

    const json sdapi = {{"prompt", "a dog"}, {"extra_images", {png_b64(16, 24), png_b64(8, 8)}}};
    SdapiRequest r = parse_sdapi_request(sdapi, false, ctx);
    ASSERT_EQ(r.spec.request.ref_images.size(), 2u);
    EXPECT_EQ(r.spec.request.ref_images[0].height, 24u);
    expect_field_error(
        [&] {
            parse_sdapi_request(json{{"prompt", "x"}, {"extra_images", {"not base64"}}}, false,
                                ctx);
        },
        "extra_images[0]");

    const json native = {{"prompt", "a cat"},
                         {"ref_images", {png_b64(16, 16)}},
                         {"ref_image_args", "preset=flux2"},
                         {"increase_ref_index", true}};
    JobSpec n = parse_native_request(native, ctx);
    EXPECT_EQ(n.request.ref_images.size(), 1u);
    EXPECT_EQ(n.params.ref_image_args, "preset=flux2");
    EXPECT_EQ(cli::ref_image_args_spec(n.params), "preset=flux2,ref_index_mode=increase");
}

TEST_F(ServerRequests, SdapiTxt2imgReadsWebuiFields) {
    SdapiRequest r = parse_sdapi_request(json::parse(R"({
        "prompt": "a dog", "negative_prompt": "blur", "seed": 11, "sampler_name": "Euler a",
        "scheduler": "Karras", "batch_size": 2, "n_iter": 2, "steps": 6, "cfg_scale": 4.5,
        "width": 128, "height": 64, "styles": [], "restore_faces": false, "subseed": -1,
        "override_settings": {"CLIP_stop_at_last_layers": 2}, "send_images": true})"),
                                         false, ctx);
    const cli::CliParams& p = r.spec.params;
    EXPECT_EQ(r.spec.request.prompt, "a dog");
    EXPECT_EQ(r.spec.request.seed, 11);
    EXPECT_EQ(p.sample_params.sample_method, EULER_A_SAMPLE_METHOD);
    EXPECT_EQ(p.sample_params.scheduler, KARRAS_SCHEDULER);
    EXPECT_EQ(p.batch_count, 4);
    EXPECT_EQ(p.sample_params.sample_steps, 6);
    EXPECT_FLOAT_EQ(p.sample_params.guidance.txt_cfg, 4.5f);
    EXPECT_EQ(p.clip_skip, 2);
    EXPECT_EQ(r.spec.request.width, 128);
    EXPECT_EQ(r.parameters["prompt"], "a dog");
}

// The webui's hires fields: enable_hr with its scale, upscaler, second-pass steps, the
// denoising strength and an explicit target size.
TEST_F(ServerRequests, SdapiTxt2imgReadsHiresFields) {
    SdapiRequest r = parse_sdapi_request(json::parse(R"J({
        "prompt": "a dog", "width": 64, "height": 64, "enable_hr": true, "hr_scale": 1.5,
        "hr_upscaler": "Latent (bicubic)", "hr_second_pass_steps": 4,
        "denoising_strength": 0.4, "hr_resize_x": 128, "hr_resize_y": 192})J"),
                                         false, ctx);
    const cli::CliParams& p = r.spec.params;
    EXPECT_TRUE(p.hires);
    EXPECT_FLOAT_EQ(p.hires_scale, 1.5f);
    EXPECT_EQ(p.hires_steps, 4);
    EXPECT_FLOAT_EQ(p.hires_denoising_strength, 0.4f);
    EXPECT_EQ(p.hires_width, 128);
    EXPECT_EQ(p.hires_height, 192);
    EXPECT_EQ(r.spec.request.hires_upscaler, SD_HIRES_UPSCALER_LATENT_BICUBIC);
    // Without enable_hr the fields do not switch the hires fix on.
    r = parse_sdapi_request(json::parse(R"({"prompt": "a dog", "hr_scale": 2})"), false, ctx);
    EXPECT_FALSE(r.spec.params.hires);
    EXPECT_THROW(parse_sdapi_request(
                     json::parse(R"({"prompt": "x", "enable_hr": true, "hr_upscaler": "Magic"})"),
                     false, ctx),
                 RequestError);
    expect_field_error(
        [&] {
            parse_sdapi_request(
                json::parse(R"({"prompt": "x", "enable_hr": true, "hr_scale": 99})"), false, ctx);
        },
        "hr_scale");
}

TEST_F(ServerRequests, SdapiAcceptsTheWebuiWikiExamplesAsIs) {
    // From the webui wiki's API guide: the basic payload, and the override_settings one.
    SdapiRequest r =
        parse_sdapi_request(json::parse(R"({"prompt": "maltese puppy", "steps": 5})"), false, ctx);
    EXPECT_EQ(r.spec.params.sample_params.sample_steps, 5);
    r = parse_sdapi_request(json::parse(R"({"prompt": "cirno", "steps": 20,
        "override_settings": {"filter_nsfw": true, "CLIP_stop_at_last_layers": 2}})"),
                            false, ctx);
    EXPECT_EQ(r.spec.params.clip_skip, 2);
}

// Sizes off the 64-pixel grid (200x152, 1000x1000) pass to the library, which aligns them
// as the reference does (tests/pipeline/image_size_test.cpp).
TEST_F(ServerRequests, OffGridSizesAreAccepted) {
    JobSpec spec = parse_native_request(json::parse(R"({"width": 200, "height": 152})"), ctx);
    EXPECT_EQ(spec.request.width, 200);
    EXPECT_EQ(spec.request.height, 152);
    spec = parse_openai_generation(json::parse(R"({"prompt": "x", "size": "1000x1000"})"), ctx);
    EXPECT_EQ(spec.request.width, 1000);
    SdapiRequest r = parse_sdapi_request(
        json::parse(R"({"prompt": "x", "width": 200, "height": 152})"), false, ctx);
    EXPECT_EQ(r.spec.request.height, 152);
}

// <sd_cpp_extra_args> takes the native schema; a key it does not have (the webui's `steps`,
// `cfg_scale`) is a 400 naming it, not silently ignored.
TEST_F(ServerRequests, ExtraArgsRefuseUnknownKeys) {
    auto sdapi = [&](const std::string& extra) {
        json body = {{"prompt", "a cat <sd_cpp_extra_args>" + extra + "</sd_cpp_extra_args>"}};
        return parse_sdapi_request(body, false, ctx);
    };
    EXPECT_EQ(
        sdapi(R"({"sample_params": {"sample_steps": 3}})").spec.params.sample_params.sample_steps,
        3);
    expect_field_error([&] { sdapi(R"({"steps": 5})"); }, "sd_cpp_extra_args.steps");
    expect_field_error([&] { sdapi(R"({"cfg_scale": 5})"); }, "sd_cpp_extra_args.cfg_scale");
    expect_field_error([&] { sdapi(R"({"sample_params": {"steps": 5}})"); },
                       "sd_cpp_extra_args.sample_params.steps");
    expect_field_error([&] { sdapi(R"({"sample_params": {"guidance": {"cfg": 5}}})"); },
                       "sd_cpp_extra_args.sample_params.guidance.cfg");
    expect_field_error([&] { sdapi(R"({"lora": [{"path": "x", "weight": 1}]})"); },
                       "sd_cpp_extra_args.lora[0].weight");
}

// A NUL byte would cut the prompt short (in the engine and in the PNG's parameters): refused,
// not escaped. A 5 MB prompt is refused by its bytes at once, before anything tokenizes it.
TEST_F(ServerRequests, PromptWithNulOrOverTheLimitIsRefused) {
    expect_field_error(
        [&] {
            parse_native_request(json{{"prompt", std::string("a cat\0dog", 9)}}, ctx);
        },
        "prompt");
    const auto start = std::chrono::steady_clock::now();
    expect_field_error(
        [&] {
            parse_native_request(json{{"prompt", std::string(5 << 20, 'a')}}, ctx);
        },
        "prompt");
    expect_field_error(
        [&] {
            parse_native_request(json{{"negative_prompt", std::string(1 << 20, 'a')}}, ctx);
        },
        "negative_prompt");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// A field the JSON library would read as the wrong type gives our message, never the
// library's exception text (include_init_images: 1 was one).
TEST_F(ServerRequests, NumericBooleanIsReadByTheFieldRules) {
    json body = {{"prompt", "x"},
                 {"init_images", json::array({png_b64(64, 64)})},
                 {"include_init_images", 1}};
    SdapiRequest r = parse_sdapi_request(body, true, ctx);
    EXPECT_FALSE(r.parameters["init_images"].is_null());
}

TEST_F(ServerRequests, SdapiImg2imgReadsImagesAndStrength) {
    json body = {{"prompt", "x"},
                 {"init_images", json::array({"data:image/png;base64," + png_b64(64, 80)})},
                 {"mask", png_b64(64, 80, 0, 1)},
                 {"inpainting_mask_invert", 1},
                 {"denoising_strength", 0.3}};
    SdapiRequest r = parse_sdapi_request(body, true, ctx);
    EXPECT_EQ(r.spec.request.width, 64);
    EXPECT_EQ(r.spec.request.height, 80);
    EXPECT_FLOAT_EQ(r.spec.params.strength, 0.3f);
    EXPECT_EQ(r.spec.request.mask_image.pixels[0], 255);  // inverted black mask
    EXPECT_TRUE(r.parameters["init_images"].is_null());
    expect_field_error([&] { parse_sdapi_request(json::parse(R"({"prompt": "x"})"), true, ctx); },
                       "init_images");
    body["init_images"] = json::array({"%%%"});
    expect_field_error([&] { parse_sdapi_request(body, true, ctx); }, "init_images[0]");
}

TEST_F(ServerRequests, SdapiNamesEachWrongField) {
    auto parse = [&](const char* text) { parse_sdapi_request(json::parse(text), false, ctx); };
    expect_field_error([&] { parse(R"({"sampler_name": "string"})"); }, "sampler_name");
    expect_field_error([&] { parse(R"({"scheduler": "Bogus"})"); }, "scheduler");
    expect_field_error([&] { parse(R"({"steps": -1})"); }, "steps");
    expect_field_error([&] { parse(R"({"steps": 151})"); }, "steps");
    expect_field_error([&] { parse(R"({"cfg_scale": "7"})"); }, "cfg_scale");
    expect_field_error([&] { parse(R"({"width": 0})"); }, "width");
    expect_field_error([&] { parse(R"({"batch_size": 4, "n_iter": 4})"); }, "n_iter");
    expect_field_error([&] { parse(R"({"styles": "anime"})"); }, "styles");
    expect_field_error([&] { parse(R"({"tiling": true})"); }, "tiling");
    expect_field_error([&] { parse(R"({"override_settings": {"CLIP_stop_at_last_layers": 0}})"); },
                       "override_settings.CLIP_stop_at_last_layers");
}

}  // namespace
}  // namespace server
