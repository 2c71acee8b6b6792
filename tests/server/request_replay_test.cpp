// A request sent through the Redis queue: the worker's parse of the stored request (JSON
// bodies, multipart form parts as JSON) gives the API node's JobSpec, with the seed it parsed;
// what the worker's library settled comes back to the API node's JobSpec.
#include "request_replay.h"

#include <gtest/gtest.h>

#include "image/image_io.h"
#include "request_error.h"

namespace server {
namespace {

class RequestReplay : public ::testing::Test {
  protected:
    cli::CliParams defaults;
    ParseContext ctx{defaults, ServerLimits{}};
};

TEST_F(RequestReplay, JsonKindsParseAgainWithTheApiNodesSeed) {
    const nlohmann::json native = {{"prompt", "a cat"}, {"width", 64}, {"height", 128}};
    const nlohmann::json sdapi = {{"prompt", "a dog"}, {"steps", 3}, {"seed", -1}};
    const nlohmann::json openai = {{"prompt", "a fox"}, {"size", "256x64"}, {"n", 2}};
    const JobSpec a = replay_request({"native", native}, 1234, ctx);
    EXPECT_EQ(a.request.prompt, "a cat");
    EXPECT_EQ(a.request.width, 64);
    EXPECT_EQ(a.request.height, 128);
    EXPECT_EQ(a.request.seed, 1234);
    const JobSpec b = replay_request({"sdapi_txt2img", sdapi}, 99, ctx);
    EXPECT_EQ(b.params.sample_params.sample_steps, 3);
    EXPECT_EQ(b.request.seed, 99);  // the API node's, not the body's parse again
    const JobSpec c = replay_request({"openai_generation", openai}, 7, ctx);
    EXPECT_EQ(c.request.width, 256);
    EXPECT_EQ(c.params.batch_count, 2);
    EXPECT_EQ(c.request.seed, 7);
    const nlohmann::json video = {
        {"prompt", "a fox"}, {"video_frames", 9}, {"output_format", "avi"}};
    const JobSpec d = replay_request({"native_video", video}, 5, ctx);
    EXPECT_TRUE(d.video());
    EXPECT_EQ(d.params.video_frames, 9);
    EXPECT_EQ(d.output.video_format, sd::image::VideoFormat::MjpegAvi);
    EXPECT_EQ(d.request.seed, 5);
}

TEST_F(RequestReplay, FormPartsRoundTripThroughJson) {
    sd::image::Image image;
    image.width = 72;
    image.height = 64;
    image.channels = 3;
    image.pixels.assign(72 * 64 * 3, 200);
    const std::vector<uint8_t> png = sd::image::encode_image(sd::image::Format::Png, image, "");
    const std::vector<FormPart> form = {
        {"prompt", "a cat", "", ""},
        {"image", std::string(png.begin(), png.end()), "cat.png", "image/png"}};
    const JobSpec direct = parse_openai_edit(form, ctx);
    const JobSpec replayed = replay_request({"openai_edit", form_parts_json(form)}, 5, ctx);
    EXPECT_EQ(replayed.request.prompt, direct.request.prompt);
    EXPECT_EQ(replayed.request.width, 72);
    EXPECT_EQ(replayed.request.init_image.pixels, direct.request.init_image.pixels);
    EXPECT_EQ(replayed.request.seed, 5);
}

TEST_F(RequestReplay, WhatTheWorkerSettledReachesTheApiNode) {
    JobSpec worker = replay_request({"native", {{"prompt", "a cat"}, {"width", 100}}}, -1, ctx);
    EXPECT_EQ(worker.request.seed, -1);  // the worker's library draws it
    EXPECT_EQ(worker.params.sample_params.sample_method, SAMPLE_METHOD_COUNT);
    // As sd_settle_img_gen_params wrote them back (report_settled).
    worker.request.seed = 123456;
    worker.request.width = 128;
    worker.params.sample_params.sample_method = EULER_A_SAMPLE_METHOD;
    worker.params.sample_params.scheduler = KARRAS_SCHEDULER;
    worker.params.sample_params.sample_steps = 9;
    JobSpec api_node = replay_request({"native", {{"prompt", "a cat"}, {"width", 100}}}, -1, ctx);
    apply_settled(api_node, settled_text(worker));
    EXPECT_EQ(api_node.request.seed, 123456);
    EXPECT_EQ(api_node.request.width, 128);
    EXPECT_EQ(api_node.params.sample_params.sample_method, EULER_A_SAMPLE_METHOD);
    EXPECT_EQ(api_node.params.sample_params.scheduler, KARRAS_SCHEDULER);
    EXPECT_EQ(api_node.params.sample_params.sample_steps, 9);
    for (const char* text : {"", "not json", "[1]", "{\"seed\": \"x\"}"}) {
        JobSpec same = api_node;
        apply_settled(same, text);
        EXPECT_EQ(same.request.seed, 123456) << text;
    }
}

TEST_F(RequestReplay, AnUnknownKindIsRefused) {
    EXPECT_THROW(replay_request({"bogus", nlohmann::json::object()}, 1, ctx), RequestError);
    EXPECT_THROW(replay_request({"native", {{"width", "wide"}}}, 1, ctx), RequestError);
}

// A queue holds what any process wrote: malformed form parts are the request's fault (4xx
// naming them), not the JSON library's exception (fuzz_redis_records).
TEST_F(RequestReplay, MalformedQueuedFormPartsAreRefusedByName) {
    const nlohmann::json part = {
        {"name", "prompt"}, {"content_b64", "YQ=="}, {"filename", ""}, {"content_type", ""}};
    auto with = [&part](const char* key, nlohmann::json value) {
        nlohmann::json p = part;
        p[key] = std::move(value);
        return nlohmann::json::array({p});
    };
    for (const nlohmann::json& parts : {nlohmann::json("parts"), nlohmann::json::array({1}),
                                        nlohmann::json::array({nlohmann::json{{"name", "prompt"}}}),
                                        with("filename", 3), with("content_b64", "*")}) {
        try {
            replay_request({"openai_edit", parts}, 1, ctx);
            ADD_FAILURE() << "accepted " << parts.dump();
        } catch (const RequestError& e) {
            EXPECT_EQ(e.status(), 400) << parts.dump();
            EXPECT_EQ(e.code(), "invalid_queued_request") << parts.dump();
        }
    }
}

}  // namespace
}  // namespace server
