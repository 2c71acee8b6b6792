// Shared by the pipeline's reference tests: one model loaded per test suite, a request
// builder and the PSNR check against ../shared/fixtures/reference/<family>/<id>.png.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "fixture_files.h"
#include "image/image_io.h"
#include "image_compare.h"
#include "io/model_files.h"
#include "pipeline/sd_pipeline.h"
#include "test_util.h"

namespace sd::test {

inline Image8 read_rgb(const std::string& path) {
    image::Image img = image::read_image(path, 3);
    return {static_cast<int>(img.width), static_cast<int>(img.height), 3, img.pixels};
}

struct LoadedModel {
    ModelFiles files;
    SdModels models;
};

// manifest "sd15" + seed 1 -> the generated f16 fixture, loaded once.
inline std::unique_ptr<LoadedModel> load_fixture_model(const std::string& manifest, int seed,
                                                       Prediction prediction = PREDICTION_COUNT) {
    auto m = std::make_unique<LoadedModel>();
    m->files.add(generated_checkpoint(manifest, "f16", seed), ModelRole::Checkpoint);
    PipelineOptions options;
    options.tokenizer_dir = fixtures_dir() + "/tokenizers";
    options.prediction = prediction;
    m->models = SdModels::load(m->files, options);
    return m;
}

inline ImageRequest request(const char* prompt, int steps, int w, int h, int64_t seed, float cfg,
                            SampleMethod method, Scheduler scheduler) {
    ImageRequest r;
    r.prompt = prompt;
    r.steps = steps;
    r.width = w;
    r.height = h;
    r.seed = seed;
    r.cfg_scale = cfg;
    r.method = method;
    r.scheduler = scheduler;
    r.rng = CUDA_RNG;
    return r;
}

// Generates and compares with the reference PNG; prints and records the PSNR.
inline void expect_matches_reference(const SdModels& models, const ImageRequest& r, const std::string& family,
                                     const std::string& id) {
    std::vector<Image8> images = generate_images(models, r);
    ASSERT_EQ(images.size(), 1u);
    Image8 want = read_rgb(fixtures_dir() + "/reference/" + family + "/" + id + ".png");
    double p = psnr(images[0].pixels, want.pixels);
    std::printf("%s/%s: PSNR %.2f dB\n", family.c_str(), id.c_str(), p);
    testing::Test::RecordProperty("psnr_db", std::to_string(p));
    EXPECT_GE(p, 40.0) << id;
}

}  // namespace sd::test
