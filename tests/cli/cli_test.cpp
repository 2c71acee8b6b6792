// sd-cli: the program run as a user runs it (help, bad values, convert, metadata, the
// generation flow up to the engine's "not built yet"), and its parts called directly
// (output names, the parameters text against the reference images' own).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_cli.h"
#include "cli_options.h"
#include "esrgan_files.h"
#include "fixture_files.h"
#include "generation_request.h"
#include "image/image_io.h"
#include "image_metadata.h"
#include "io/imatrix.h"
#include "io/io_test_util.h"
#include "io/tensor_file.h"
#include "io/tensor_writer.h"
#include "output_paths.h"
#include "progress_bar.h"
#include "save_results.h"
#include "test_util.h"
#include "tokenizer/clip_tokenizer.h"

namespace cli {
namespace {

using json = nlohmann::json;

std::string fixtures() {
    return sd::test::fixtures_dir();
}

std::vector<std::string> reference_flags() {
    std::ifstream in(fixtures() + "/cli/sd-cli-flags.txt");
    std::vector<std::string> flags;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) flags.push_back(line);
    return flags;
}

// Each option's help entry (its lines, wrapped ones joined by one space), keyed by every name.
std::map<std::string, std::string> help_entries(const std::string& help) {
    std::map<std::string, std::string> entries;
    std::istringstream in(help);
    std::vector<std::string> names;
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("  -", 0) == 0) {
            names.clear();
            std::istringstream words(line);
            for (std::string w; words >> w;) {
                if (w.back() == ',') w.pop_back();
                if (w[0] != '-') break;
                names.push_back(w);
            }
        }
        const size_t text = line.find_first_not_of(' ');
        if (text == std::string::npos) continue;
        for (const std::string& n : names) entries[n] += line.substr(text) + " ";
    }
    return entries;
}

TEST(CliHelp, ListsEveryReferenceFlagWithADefault) {
    const RunResult r = run_cli({"-h"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto entries = help_entries(r.output);
    const std::vector<std::string> flags = reference_flags();
    ASSERT_GT(flags.size(), 150u);
    for (const std::string& flag : flags) {
        auto it = entries.find(flag);
        ASSERT_NE(it, entries.end()) << flag << " is missing from -h";
        EXPECT_NE(it->second.find("(default: "), std::string::npos) << it->second;
        EXPECT_NE(find_option(flag), nullptr) << flag;
    }
    EXPECT_EQ(run_cli({"--help"}).exit_code, 0);
    EXPECT_NE(run_cli({"--version"}).output.find("version"), std::string::npos);
}

// -h wraps to the terminal: $COLUMNS when stdout is not one.
TEST(CliHelp, WrapsToTheTerminalWidth) {
    for (const char* columns : {"80", "120"}) {
        ::setenv("COLUMNS", columns, 1);
        const RunResult r = run_cli({"-h"});
        ::unsetenv("COLUMNS");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        std::istringstream in(r.output);
        int lines = 0;
        for (std::string line; std::getline(in, line); ++lines) {
            // A single word longer than the help column (a long path) may stand out alone.
            const bool one_word = line.find(' ', line.find_first_not_of(' ')) == std::string::npos;
            if (!one_word) {
                EXPECT_LE(line.size(), std::stoul(columns)) << line;
            }
        }
        EXPECT_GT(lines, 200);
    }
}

// What the issue of a newcomer's first hour found untrue in -h.
TEST(CliHelp, SaysWhatTheProgramDoes) {
    const auto entries = help_entries(run_cli({"-h"}).output);
    EXPECT_NE(entries.at("--mmap").find("always"), std::string::npos) << entries.at("--mmap");
    EXPECT_NE(entries.at("-W").find("64"), std::string::npos) << entries.at("-W");
    EXPECT_NE(entries.at("-H").find("64"), std::string::npos) << entries.at("-H");
    for (const char* folder : {"clip/", "t5/", "qwen2/"})
        EXPECT_NE(entries.at("--tokenizer-dir").find(folder), std::string::npos) << folder;
    EXPECT_NE(entries.at("--list-families").find("famil"), std::string::npos);
}

TEST(CliHelp, TableIsConsistent) {
    std::map<std::string, int> seen;
    for (const OptionSpec& spec : option_table()) {
        EXPECT_FALSE(spec.help.empty()) << spec.long_name;
        EXPECT_FALSE(spec.default_text.empty()) << spec.long_name;
        EXPECT_EQ(++seen[spec.long_name], 1) << spec.long_name;
        if (!spec.short_name.empty()) {
            EXPECT_EQ(++seen[spec.short_name], 1) << spec.short_name;
        }
        EXPECT_TRUE(spec.apply) << spec.long_name;
    }
}

std::string bad_value_for(const OptionSpec& spec) {
    switch (spec.arg) {
        case Arg::Int:
            return "12abc";
        case Arg::Float:
            return "fast";
        case Arg::Choice:
            return "no-such-choice";
        default:
            return "";
    }
}

TEST(CliErrors, EveryMistypedValueIsRefused) {
    int checked = 0;
    for (const OptionSpec& spec : option_table()) {
        const std::string bad = bad_value_for(spec);
        if (bad.empty()) continue;
        const RunResult r = run_cli({spec.long_name, bad});
        EXPECT_EQ(r.exit_code, 1) << spec.long_name << ": " << r.output;
        EXPECT_NE(r.output.find(spec.long_name), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("'" + bad + "'"), std::string::npos) << r.output;
        ++checked;
    }
    EXPECT_GE(checked, 60);
}

TEST(CliErrors, OutOfRangeAndMissingValues) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"-m", "x", "-W", "0"}, "-W/--width"},
        {{"-m", "x", "-H", "0"}, "-H/--height"},
        {{"-m", "x", "--steps", "0"}, "--steps"},
        {{"-m", "x", "-b", "0"}, "--batch-count"},
        {{"-m", "x", "--strength", "1.5"}, "--strength"},
        {{"-m", "x", "--cfg-scale", "-1"}, "--cfg-scale"},
        {{"-m", "x", "--timestep-shift", "2000"}, "--timestep-shift"},
        {{"-m", "x", "--upscale-repeats", "0"}, "--upscale-repeats"},
        {{"-m", "x", "--output-begin-idx", "-2"}, "--output-begin-idx"},
        {{"-m", "x", "--preview-interval", "0"}, "--preview-interval"},
        {{"-m", "x", "--preview", "tae"}, "--taesd"},
        {{"-m", "x", "--preview", "sometimes"}, "--preview"},
        {{"-m", "x", "--taesd-preview-only"}, "--taesd"},
        {{"-m", "x", "--vae-tile-overlap", "1"}, "--vae-tile-overlap"},
        {{"-m", "x", "--hires-width", "-1"}, "--hires-width"},
        {{"-m", "x", "--mask", "m.png"}, "--mask needs an init image"},
        {{"-m", "x", "--hires-denoising-strength", "2"}, "--hires-denoising-strength"},
        {{"-m", "x", "--sigmas", "1,x"}, "--sigmas"},
        {{"-m", "x", "--skip-layers", "[7,a]"}, "--skip-layers"},
        {{"-m", "x", "--model-args", "nope=1"}, "--model-args"},
        {{"-m", "x", "--vae-tile-size", "32xq"}, "--vae-tile-size"},
        {{"-m", "x", "--cache-mode", "easycache", "--cache-option", "threshold"}, "--cache-option"},
        {{"-m", "x", "--cache-mode", "ucache", "--cache-option", "bogus=1"}, "'bogus'"},
        {{"-m", "x", "--cache-mode", "ucache", "--cache-option", "threshold=-1"}, "threshold"},
        {{"-m", "x", "--cache-mode", "easycache", "--cache-option", "start=0.9,end=0.5"},
         "start and end"},
        {{"-m", "x", "--cache-mode", "dbcache", "--cache-option", "Fn=x"}, "'Fn'"},
        {{"-m", "x", "--cache-mode", "turbo"}, "--cache-mode"},
        {{"-m", "x", "--ip-adapter", "ip.safetensors"}, "--ip-adapter"},
        {{"-m", "x", "--ad-model", "face.pt"}, "--ad-model"},
        {{"-m", "x", "--hires", "--hires-upscaler", "NoSuchUpscaler"}, "--hires-upscaler"},
        {{"--steps"}, "--steps"},
        {{"--no-such-flag"}, "--no-such-flag"},
        {{"-p", "a cat"}, "-m"},
        {{"-M", "metadata"}, "--image"},
        {{"-M", "convert"}, "-m"},
        {{"-M", "upscale", "-i", "x.png"}, "--upscale-model"},
        {{"-M", "sing"}, "-M/--mode"},
    };
    for (const auto& [args, mention] : cases) {
        const RunResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << args[args.size() - 1] << ": " << r.output;
        EXPECT_NE(r.output.find(mention), std::string::npos) << r.output;
    }
}

std::string small_model() {
    static const std::string path = [] {
        std::string p = sd::test::temp_path("cli_model.safetensors");
        auto out_of = [](const std::string& name, const sd::Tensor& t) {
            return sd::OutputTensor{name, t.dtype(), t.shape(), [t] { return t; }};
        };
        sd::write_safetensors(
            p, {out_of("model.diffusion_model.middle_block.1.proj_in.weight",
                       sd::test::random_tensor({4, 256}, 1)),
                out_of("first_stage_model.decoder.conv_in.weight",
                       sd::test::random_tensor({4, 4, 3, 3}, 2)),
                out_of("cond_stage_model.transformer.text_model.encoder.layers.0.mlp.fc1.weight",
                       sd::test::random_tensor({4, 256}, 3))});
        return p;
    }();
    return path;
}

TEST(CliConvert, WritesAGgufThatLoads) {
    const std::string out = sd::test::temp_path("cli_out.gguf");
    const RunResult r = run_cli({"-M", "convert", "-m", small_model(), "-o", out, "--type", "q4_K",
                                 "--tokenizer-dir", fixtures() + "/tokenizers"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    sd::TensorFile f = sd::open_tensor_file(out);
    EXPECT_EQ(f.format, "gguf");
    ASSERT_NE(f.find("model.diffusion_model.middle_block.1.proj_in.weight"), nullptr);
    EXPECT_EQ(f.find("model.diffusion_model.middle_block.1.proj_in.weight")->dtype,
              sd::DType::Q4_K);
    EXPECT_TRUE(sd::ClipTokenizer::gguf_has_vocab(f.metadata));
    EXPECT_EQ(f.find("first_stage_model.decoder.conv_in.weight")->load().shape(),
              (sd::Shape{4, 4, 3, 3}));
}

TEST(CliConvert, DefaultOutputNameAndErrors) {
    const std::string dir = sd::test::temp_path("convert_dir");
    std::filesystem::create_directories(dir);
    const RunResult r = run_cli({"-M", "convert", "-m", small_model(), "--type", "f16"}, dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(std::ifstream(dir + "/output.gguf").good());
    const RunResult missing = run_cli({"-M", "convert", "-m", "/nonexistent/m.safetensors"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.output.find("/nonexistent/m.safetensors"), std::string::npos)
        << missing.output;
    const RunResult bad_type =
        run_cli({"-M", "convert", "-m", small_model(), "--type", "iq2_xs", "-o", dir + "/x.gguf"});
    EXPECT_EQ(bad_type.exit_code, 1);
    EXPECT_NE(bad_type.output.find("iq2_xs"), std::string::npos) << bad_type.output;
}

// --imat-out collects while generating and writes the file; --imat-in feeds convert.
TEST(CliConvert, ImatrixCollectedThenUsedByConvert) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    const std::string dir = sd::test::temp_path("imatrix_dir");
    std::filesystem::create_directories(dir);
    const std::string collected = dir + "/sd15.imatrix.dat";
    const RunResult gen = run_cli({"-m", model, "-p", "a cat", "-W", "64", "-H", "64", "--steps",
                                   "1", "-o", dir + "/out.png", "--imat-out", collected,
                                   "--tokenizer-dir", fixtures() + "/tokenizers"});
    ASSERT_EQ(gen.exit_code, 0) << gen.output;
    sd::imatrix::clear();
    EXPECT_GT(sd::imatrix::load(collected), 100u);
    EXPECT_EQ(sd::imatrix::importance("model.diffusion_model.input_blocks.1.1.transformer_blocks.0."
                                      "attn2.to_k.weight")
                  .size(),
              768u);

    // An imatrix for the small model's two matrices; given after the collected one, its entries
    // replace those of the same names (different sizes).
    sd::imatrix::clear();
    std::vector<double> sums(256);
    for (size_t j = 0; j < sums.size(); ++j) sums[j] = 1.0 + double(j % 7);
    sd::imatrix::add("model.diffusion_model.middle_block.1.proj_in.weight", sums.data(), 256, 3);
    sd::imatrix::add("cond_stage_model.transformer.text_model.encoder.layers.0.mlp.fc1.weight",
                     sums.data(), 256, 3);
    const std::string small = dir + "/small.imatrix.dat";
    sd::imatrix::save(small);
    sd::imatrix::clear();
    const RunResult conv =
        run_cli({"-M", "convert", "-m", small_model(), "-o", dir + "/q.gguf", "--type", "q4_K",
                 "--imat-in", collected, "--imat-in", small, "-v"});
    ASSERT_EQ(conv.exit_code, 0) << conv.output;
    EXPECT_NE(conv.output.find("quantized 2 tensors with importance-matrix weights"),
              std::string::npos)
        << conv.output;
    const RunResult bad = run_cli({"-M", "convert", "-m", small_model(), "-o", dir + "/b.gguf",
                                   "--type", "q4_K", "--imat-in", dir + "/missing.dat"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.output.find(dir + "/missing.dat"), std::string::npos) << bad.output;
}

sd::image::Image test_image(uint32_t w, uint32_t h) {
    sd::image::Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    img.pixels.resize(size_t{w} * h * 3);
    for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(i * 7);
    return img;
}

const char kParameters[] = "a lovely cat\nNegative prompt: ugly\nSteps: 4, Seed: 42, Size: 16x16";

TEST(CliMetadata, PrintsTheParametersOfEachFormat) {
    for (const char* ext : {".png", ".jpg", ".webp"}) {
        const std::string path = sd::test::temp_path(std::string("meta") + ext);
        sd::image::write_image(path, test_image(16, 16), kParameters);
        const RunResult r = run_cli({"-M", "metadata", "--image", path});
        ASSERT_EQ(r.exit_code, 0) << ext << r.output;
        EXPECT_NE(r.output.find("File: " + path), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("Negative prompt: ugly"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("IDAT"), std::string::npos) << r.output;
    }
    const std::string png = sd::test::temp_path("meta.png");
    RunResult text = run_cli({"-M", "metadata", "--image", png});
    EXPECT_NE(text.output.find("Chunk: tEXt\n"), std::string::npos) << text.output;
    EXPECT_NE(text.output.find("    keyword: parameters\n"), std::string::npos) << text.output;
    RunResult all = run_cli({"-M", "metadata", "--image", png, "--metadata-all"});
    EXPECT_NE(all.output.find("Chunk: IHDR"), std::string::npos) << all.output;
    EXPECT_NE(all.output.find("width: 16"), std::string::npos) << all.output;
    RunResult as_json = run_cli({"-M", "metadata", "--image", png, "--metadata-format", "json"});
    ASSERT_EQ(as_json.exit_code, 0);
    json report = json::parse(as_json.output);
    EXPECT_EQ(report["file"], png);
    EXPECT_EQ(report["format"], "PNG");
    EXPECT_EQ(report["entries"][0]["data"]["text"], kParameters);
}

TEST(CliMetadata, BriefRawAndBadFiles) {
    const std::string png = sd::test::temp_path("long.png");
    sd::image::write_image(png, test_image(8, 8), std::string(1000, 'p'));
    RunResult brief = run_cli({"-M", "metadata", "--image", png, "--metadata-brief"});
    EXPECT_NE(brief.output.find(std::string(240, 'p') + "...\n"), std::string::npos)
        << brief.output;
    RunResult raw = run_cli({"-M", "metadata", "--image", png, "--metadata-raw", "--metadata-all"});
    EXPECT_EQ(raw.exit_code, 0);
    EXPECT_NE(raw.output.find("raw_hex_preview"), std::string::npos) << raw.output;
    std::vector<uint8_t> bytes = sd::image::read_file_bytes(png);
    const std::string cut =
        sd::test::write_temp("cut.png", std::string(bytes.begin(), bytes.begin() + 60));
    RunResult truncated = run_cli({"-M", "metadata", "--image", cut});
    EXPECT_EQ(truncated.exit_code, 1);
    EXPECT_NE(truncated.output.find(cut), std::string::npos) << truncated.output;
    RunResult missing = run_cli({"-M", "metadata", "--image", "/nonexistent.png"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.output.find("/nonexistent.png"), std::string::npos);
    RunResult reference = run_cli(
        {"-M", "metadata", "--image", fixtures() + "/reference/sd15/txt2img_dpmpp2m_karras.png"});
    EXPECT_NE(reference.output.find("Sampler: dpm++2m karras"), std::string::npos)
        << reference.output;
}

// The small model is no network the engine can run: the flow goes up to new_sd_ctx.
TEST(CliGenerate, RunsUpToTheEngine) {
    const RunResult r = run_cli({"-m", small_model(), "-p", "a cat", "-W", "64", "-H", "64"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("new_sd_ctx failed"), std::string::npos) << r.output;
    const std::string odd = sd::test::temp_path("odd.png");
    sd::image::write_image(odd, test_image(20, 12));
    // Any size goes to the library, which aligns it (CliSizes below).
    RunResult sized = run_cli({"-m", small_model(), "-i", odd});
    EXPECT_EQ(sized.exit_code, 1);
    EXPECT_NE(sized.output.find("20 x 12"), std::string::npos) << sized.output;
    EXPECT_NE(sized.output.find("new_sd_ctx failed"), std::string::npos) << sized.output;
    RunResult missing = run_cli({"-m", small_model(), "-i", "/nonexistent/init.png"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.output.find("/nonexistent/init.png"), std::string::npos) << missing.output;
    RunResult upscale = run_cli({"-M", "upscale", "--upscale-model", "x.pth", "-i", odd});
    EXPECT_EQ(upscale.exit_code, 1);
    EXPECT_NE(upscale.output.find("x.pth"), std::string::npos) << upscale.output;
    RunResult video = run_cli({"-M", "vid_gen", "-m", small_model()});
    EXPECT_EQ(video.exit_code, 1);
}

// -M upscale: a 2x model run --upscale-repeats times; a missing model, a file that is no
// ESRGAN (a checkpoint, a truncated ESRGAN) or an unreadable image: one error naming it.
TEST(CliUpscale, UpscalesAndRefusesWhatIsNotAnUpscaler) {
    const std::string model = sd::test::temp_path("cli_esrgan_x2.safetensors");
    sd::test::TinyEsrgan t;
    t.upsamples = 1;
    sd::test::write_tiny_esrgan(model, t, 5);
    const std::string in = sd::test::temp_path("upscale_in.png");
    sd::image::write_image(in, test_image(20, 12));
    const std::string out = sd::test::temp_path("upscale_out.png");
    RunResult ok = run_cli({"-M", "upscale", "--upscale-model", model, "-i", in, "-o", out,
                            "--upscale-repeats", "2", "--upscale-tile-size", "16"});
    ASSERT_EQ(ok.exit_code, 0) << ok.output;
    const sd::image::Image result = sd::image::read_image(out, 3);
    EXPECT_EQ(result.width, 80u);
    EXPECT_EQ(result.height, 48u);

    RunResult no_model = run_cli({"-M", "upscale", "-i", in});
    EXPECT_EQ(no_model.exit_code, 1);
    EXPECT_NE(no_model.output.find("--upscale-model"), std::string::npos) << no_model.output;
    RunResult checkpoint = run_cli({"-M", "upscale", "--upscale-model", small_model(), "-i", in});
    EXPECT_EQ(checkpoint.exit_code, 1);
    EXPECT_NE(checkpoint.output.find("not an ESRGAN"), std::string::npos) << checkpoint.output;
    std::string bytes;
    {
        std::ifstream f(model, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(f), {});
    }
    const std::string cut =
        sd::test::write_temp("cut_esrgan.safetensors", bytes.substr(0, bytes.size() / 2));
    RunResult truncated = run_cli({"-M", "upscale", "--upscale-model", cut, "-i", in});
    EXPECT_EQ(truncated.exit_code, 1);
    EXPECT_NE(truncated.output.find("cut_esrgan"), std::string::npos) << truncated.output;
    RunResult bad_image =
        run_cli({"-M", "upscale", "--upscale-model", model, "-i", "/nonexistent/in.png"});
    EXPECT_EQ(bad_image.exit_code, 1);
    EXPECT_NE(bad_image.output.find("/nonexistent/in.png"), std::string::npos) << bad_image.output;
}

// --upscale-model during img_gen upscales the generated image, as the reference CLI does.
TEST(CliUpscale, AfterGeneration) {
    const std::string model = sd::test::temp_path("cli_esrgan_gen.safetensors");
    sd::test::TinyEsrgan t;
    t.upsamples = 1;
    sd::test::write_tiny_esrgan(model, t, 6);
    const std::string out = sd::test::temp_path("gen_upscaled.png");
    RunResult r = run_cli({"-m", sd::test::generated_checkpoint("sd15", "f16", 1), "-p", "a cat",
                           "-W", "64", "-H", "64", "--steps", "1", "--tokenizer-dir",
                           fixtures() + "/tokenizers", "--upscale-model", model, "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(sd::image::read_image(out, 3).width, 128u);
}

// --hires: the second pass at the target size, from a latent upscaler (an explicit size of
// another aspect) and from an ESRGAN model named in --hires-upscalers-dir (by the scale).
TEST(CliHires, OutputHasTheTargetSize) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    const std::vector<std::string> base = {"-m",
                                           model,
                                           "-p",
                                           "a cat",
                                           "-W",
                                           "64",
                                           "-H",
                                           "64",
                                           "--steps",
                                           "1",
                                           "--tokenizer-dir",
                                           fixtures() + "/tokenizers",
                                           "--hires",
                                           "--hires-steps",
                                           "1"};
    auto run_hires = [&](std::vector<std::string> extra, const std::string& out) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        args.insert(args.end(), {"-o", out});
        return run_cli(args);
    };
    const std::string latent = sd::test::temp_path("hires_latent.png");
    RunResult a = run_hires(
        {"--hires-upscaler", "Latent (bicubic)", "--hires-width", "128", "--hires-height", "64"},
        latent);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    const sd::image::Image la = sd::image::read_image(latent, 3);
    EXPECT_EQ(la.width, 128u);
    EXPECT_EQ(la.height, 64u);

    const std::string dir = sd::test::temp_path("hires_upscalers");
    std::filesystem::create_directories(dir);
    sd::test::TinyEsrgan t;
    t.upsamples = 1;
    sd::test::write_tiny_esrgan(dir + "/tiny2x.safetensors", t, 12);
    const std::string upscaled = sd::test::temp_path("hires_model.png");
    RunResult b = run_hires(
        {"--hires-upscalers-dir", dir, "--hires-upscaler", "tiny2x", "--hires-scale", "3"},
        upscaled);
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_EQ(sd::image::read_image(upscaled, 3).width, 192u);
    RunResult none = run_hires({"--hires-upscaler", "None"}, sd::test::temp_path("none.png"));
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_NE(none.output.find("None"), std::string::npos) << none.output;
}

// Hardening: a thread count far beyond any machine ends at once, naming it (it used to
// hang creating threads); more threads than CPUs are clamped with a warning.
TEST(CliErrors, AbsurdThreadCountEndsAtOnce) {
    const RunResult r = run_cli({"-m", small_model(), "-p", "a cat", "-t", "100000"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.output.find("100000 threads: at most 4096"), std::string::npos) << r.output;
    const RunResult many = run_cli({"-m", small_model(), "-p", "a cat", "-t", "4000"});
    EXPECT_NE(many.output.find("4000 threads asked for"), std::string::npos) << many.output;
}

// An image file that cannot be read is one line naming its option and the file.
TEST(CliErrors, AnUnreadableImageIsNamedWithItsOption) {
    const std::string missing = testing::TempDir() + "/no_such_image.png";
    for (const char* option : {"-r", "-i", "--control-image"}) {
        const RunResult r = run_cli({"-m", small_model(), "-p", "a cat", option, missing});
        EXPECT_EQ(r.exit_code, 1) << option;
        const std::string name = std::string(option) == "-r"   ? "--ref-image"
                                 : std::string(option) == "-i" ? "--init-img"
                                                               : option;
        EXPECT_NE(r.output.find(name + ": cannot open '" + missing + "'"), std::string::npos)
            << r.output;
    }
}

// Sizes off the model's 64-pixel grid generate at the aligned size, as the reference does
// (1 step at 256x192 and 128x64); -o x.bmp writes a BMP, not x.bmp.png; an odd-sized init
// image (77x51) and a mask of yet another size are fitted to the aligned size.
TEST(CliSizes, OffGridSizesGenerateAlignedAndBmpIsWritten) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    const std::vector<std::string> base = {
        "-m", model,         "-p", "a cat",           "--steps",
        "1",  "--cfg-scale", "1",  "--tokenizer-dir", fixtures() + "/tokenizers"};
    auto run = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return run_cli(args);
    };
    const std::string bmp = sd::test::temp_path("off_grid.bmp");
    std::filesystem::remove(bmp + ".png");
    RunResult r = run({"-W", "200", "-H", "152", "-o", bmp});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("align generation request up 200x152 to 256x192 (multiple=64)"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(sd::image::format_from_path(bmp), sd::image::Format::Bmp);
    const sd::image::Image out = sd::image::read_image(bmp, 3);
    EXPECT_EQ(out.width, 256u);
    EXPECT_EQ(out.height, 192u);
    EXPECT_FALSE(std::filesystem::exists(bmp + ".png"));
    const std::string init = sd::test::temp_path("odd_77x51.png");
    const std::string mask = sd::test::temp_path("mask_40x30.png");
    sd::image::write_image(init, test_image(77, 51));
    sd::image::write_image(mask, sd::image::Image{40, 30, 1, std::vector<uint8_t>(1200, 255)});
    const std::string png = sd::test::temp_path("odd_img2img.png");
    RunResult odd = run({"-i", init, "--mask", mask, "--strength", "0.5", "-o", png});
    ASSERT_EQ(odd.exit_code, 0) << odd.output;
    const sd::image::Image fitted = sd::image::read_image(png, 3);
    EXPECT_EQ(fitted.width, 128u);
    EXPECT_EQ(fitted.height, 64u);
    EXPECT_NE(odd.output.find("resize the mask image from 40x30 to 128x64"), std::string::npos)
        << odd.output;
}

// The FLUX fixture's files (run_cli.h), a 64x64 image of `steps` steps at cfg 1.
std::vector<std::string> flux_64px_args(const std::string& prompt, int steps) {
    std::vector<std::string> args = cli::flux_fixture_args();
    args.insert(args.end(), {"-p", prompt, "--cfg-scale", "1", "--steps", std::to_string(steps),
                             "-W", "64", "-H", "64"});
    return args;
}

// --flow-shift replaces a flow model's shift for that generation (FLUX.1-dev's own is 1.15):
// with two discrete steps the second sigma depends on it, so the images differ (FLUX's default
// flux scheduler takes its mu from the image size instead, as the reference's); a model that
// is not a flow model says it has no shift to change.
TEST(CliFlux, FlowShiftChangesTheSchedule) {
    std::vector<std::string> base = flux_64px_args("a cat", 2);
    base.insert(base.end(), {"--scheduler", "discrete"});
    auto run = [&](const std::string& out, std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), {"-o", out});
        args.insert(args.end(), extra.begin(), extra.end());
        return run_cli(args);
    };
    const std::string own = sd::test::temp_path("flux_own_shift.png");
    const std::string shifted = sd::test::temp_path("flux_shift3.png");
    const RunResult a = run(own, {});
    ASSERT_EQ(a.exit_code, 0) << a.output;
    EXPECT_EQ(a.output.find("flow shift"), std::string::npos) << a.output;
    const RunResult b = run(shifted, {"--flow-shift", "3"});
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_NE(b.output.find("flow shift 3 for this generation"), std::string::npos) << b.output;
    EXPECT_NE(sd::image::read_image(own, 3).pixels, sd::image::read_image(shifted, 3).pixels);

    const RunResult sd15 =
        run_cli({"-m", sd::test::generated_checkpoint("sd15", "f16", 1), "-p", "a cat", "--steps",
                 "1", "-W", "64", "-H", "64", "--flow-shift", "3", "--tokenizer-dir",
                 fixtures() + "/tokenizers", "-o", sd::test::temp_path("sd15_flow_shift.png")});
    ASSERT_EQ(sd15.exit_code, 0) << sd15.output;
    EXPECT_NE(sd15.output.find("flow_shift 3 ignored: the SD 1.x model is not a flow model"),
              std::string::npos)
        << sd15.output;
}

// Kontext-style reference images on the FLUX fixture: references change the image, and
// numbered 1, 2 (--increase-ref-index) they give another image than both at index 1 side by
// side. Bad input is one line and exit 1: an unreadable reference, a reference for
// SD 1.x, an unknown --ref-image-args key.
TEST(CliFlux, ReferenceImagesBecomeTokens) {
    const std::vector<std::string> base = flux_64px_args("make it red", 2);
    auto run = [&](const std::string& out, std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), {"-o", out});
        args.insert(args.end(), extra.begin(), extra.end());
        return run_cli(args);
    };
    // Two pictures of other sizes: a 48x32 gradient and a 40x40 checkerboard.
    sd::image::Image a{48, 32, 3, {}}, b{40, 40, 3, {}};
    for (uint32_t y = 0; y < 32; ++y)
        for (uint32_t x = 0; x < 48; ++x)
            a.pixels.insert(a.pixels.end(), {uint8_t(x * 5), uint8_t(y * 7), 90});
    for (uint32_t y = 0; y < 40; ++y)
        for (uint32_t x = 0; x < 40; ++x)
            b.pixels.insert(b.pixels.end(), 3, uint8_t(((x / 8 + y / 8) % 2) * 255));
    const std::string ref_a = sd::test::temp_path("ref_a.png"),
                      ref_b = sd::test::temp_path("ref_b.png");
    sd::image::write_image(ref_a, a);
    sd::image::write_image(ref_b, b);
    const std::string none = sd::test::temp_path("flux_no_ref.png");
    const std::string fixed = sd::test::temp_path("flux_two_fixed.png");
    const std::string numbered = sd::test::temp_path("flux_two_numbered.png");
    const RunResult plain = run(none, {});
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    const RunResult two = run(fixed, {"-r", ref_a, "--ref-image", ref_b});
    ASSERT_EQ(two.exit_code, 0) << two.output;
    // 64x64: area 4096, sqrt(4096 * 48 / 32) = 78.4 -> 80, 52.3 -> 48; the square one 64x64.
    EXPECT_NE(two.output.find("reference image 1: 48x32 resized to 80x48"), std::string::npos)
        << two.output;
    EXPECT_NE(two.output.find("reference image 2: 40x40 resized to 64x64"), std::string::npos)
        << two.output;
    EXPECT_NE(sd::image::read_image(none, 3).pixels, sd::image::read_image(fixed, 3).pixels);
    const RunResult two_numbered =
        run(numbered, {"-r", ref_a, "-r", ref_b, "--increase-ref-index"});
    ASSERT_EQ(two_numbered.exit_code, 0) << two_numbered.output;
    EXPECT_NE(sd::image::read_image(fixed, 3).pixels, sd::image::read_image(numbered, 3).pixels);

    auto expect_one_line_error = [](const RunResult& r, const std::string& want) {
        EXPECT_EQ(r.exit_code, 1) << r.output;
        EXPECT_NE(r.output.find(want), std::string::npos) << r.output;
    };
    const std::string missing = sd::test::temp_path("no_such_ref.png");
    expect_one_line_error(run(sd::test::temp_path("unused.png"), {"-r", missing}), missing);
    expect_one_line_error(
        run(sd::test::temp_path("unused.png"), {"-r", ref_a, "--ref-image-args", "colour=red"}),
        "--ref-image-args: unknown key 'colour'");
    expect_one_line_error(
        run_cli({"-m", sd::test::generated_checkpoint("sd15", "f16", 1), "-p", "a cat", "-W", "64",
                 "-H", "64", "-r", ref_a, "--tokenizer-dir", fixtures() + "/tokenizers", "-o",
                 sd::test::temp_path("sd15_ref.png")}),
        "--ref-image: SD 1.x");
}

// -W 100000 -H 100000 is refused before anything is allocated, with the estimate and what
// the machine has; a 5 MB prompt file before the model loads; a NUL byte in a prompt (which
// would cut it short, in the engine and in the PNG's parameters) is refused, not escaped.
TEST(CliLimits, AbsurdSizeAndHugePromptEndAtOnce) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    auto start = std::chrono::steady_clock::now();
    const RunResult big = run_cli({"-m", model, "-p", "a cat", "-W", "100000", "-H", "100000",
                                   "--tokenizer-dir", fixtures() + "/tokenizers"});
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_EQ(big.exit_code, 1);
    EXPECT_NE(big.output.find("100032x100032 image needs about"), std::string::npos) << big.output;
    EXPECT_NE(big.output.find("GiB available"), std::string::npos) << big.output;
    const std::string prompt = sd::test::temp_path("huge_prompt.txt");
    std::ofstream(prompt) << std::string(5 << 20, 'a');
    start = std::chrono::steady_clock::now();
    const RunResult huge = run_cli({"-m", model, "--prompt-file", prompt});
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_EQ(huge.exit_code, 1);
    EXPECT_NE(huge.output.find("--max-prompt-tokens"), std::string::npos) << huge.output;
    const std::string nul = sd::test::temp_path("nul_prompt.txt");
    std::ofstream(nul) << std::string("a cat\0 and a dog", 16);
    const RunResult with_nul = run_cli({"-m", model, "--prompt-file", nul});
    EXPECT_EQ(with_nul.exit_code, 1);
    EXPECT_NE(with_nul.output.find("NUL byte"), std::string::npos) << with_nul.output;
}

// The log names where the CLIP tokenizer really came from: --tokenizer-dir wins over
// SD_TOKENIZER_DIR, which is named when it is the source. (--timestep-shift, refused by
// this build, stops the run right after the model loads.)
TEST(CliTokenizer, LogNamesItsRealSource) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    const std::string dir = fixtures() + "/tokenizers";
    ::setenv("SD_TOKENIZER_DIR", dir.c_str(), 1);
    const RunResult given =
        run_cli({"-m", model, "-p", "x", "--timestep-shift", "100", "--tokenizer-dir", dir});
    const RunResult env = run_cli({"-m", model, "-p", "x", "--timestep-shift", "100"});
    ::unsetenv("SD_TOKENIZER_DIR");
    EXPECT_NE(given.output.find("CLIP tokenizer: " + dir + "/clip (--tokenizer-dir)"),
              std::string::npos)
        << given.output;
    EXPECT_NE(env.output.find("CLIP tokenizer: " + dir + "/clip (SD_TOKENIZER_DIR)"),
              std::string::npos)
        << env.output;
}

// Options this build would take and not act on are refused naming them (never a silent
// no-op): context ones before any model loads, generation ones before anything runs.
TEST(CliErrors, InertOptionsAreRefusedNamingThem) {
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--force-sdxl-vae-conv-scale"}, {"--vae-format", "flux"}}) {
        std::vector<std::string> args = {"-m", small_model(), "-p", "a cat"};
        args.insert(args.end(), extra.begin(), extra.end());
        const RunResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << r.output;
        EXPECT_NE(r.output.find(extra[0]), std::string::npos) << r.output;
    }
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--timestep-shift", "100"},
          {"--img-cfg-scale", "2"},
          {"--vae-relative-tile-size", "2x2"},
          {"--extra-sample-args", "x=1"}}) {
        std::vector<std::string> args = {
            "-m", model, "-p", "a cat",           "-W",
            "64", "-H",  "64", "--tokenizer-dir", fixtures() + "/tokenizers"};
        args.insert(args.end(), extra.begin(), extra.end());
        const RunResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << r.output;
        EXPECT_NE(r.output.find(extra[0]), std::string::npos) << r.output;
    }
}

// --taesd and the previews on the sd15 fixture at 64x64: each preview mode writes
// --preview-path (proj at latent size), and a TAESD file that is cut short or is not a TAESD
// stops the run with its name.
TEST(CliPreview, WritesThePreviewAndRefusesBadTaesdFiles) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    const std::string taesd = sd::test::generated_checkpoint("taesd", "f32", 5);
    const std::string dir = sd::test::temp_path("preview");
    std::filesystem::create_directories(dir);
    auto run = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = {"-m",
                                         model,
                                         "--tokenizer-dir",
                                         fixtures() + "/tokenizers",
                                         "-p",
                                         "a cat",
                                         "-W",
                                         "64",
                                         "-H",
                                         "64",
                                         "--steps",
                                         "2",
                                         "-t",
                                         "2",
                                         "-o",
                                         dir + "/out.png"};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_cli(args);
    };
    for (const auto& [mode, size] : {std::pair{"proj", 8u}, {"tae", 64u}, {"vae", 64u}}) {
        const std::string preview = dir + "/preview_" + mode + ".png";
        RunResult r = run({"--taesd", taesd, "--taesd-preview-only", "--preview", mode,
                           "--preview-path", preview, "--preview-noisy"});
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const sd::image::Image img = sd::image::read_image(preview, 3);
        EXPECT_EQ(img.width, size) << mode;
        EXPECT_EQ(img.height, size) << mode;
    }
    std::ifstream whole(taesd, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
    const std::string cut = dir + "/taesd_cut.safetensors";
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size() / 2));
    for (const std::string& bad : {cut, small_model()}) {
        RunResult r = run({"--taesd", bad});
        EXPECT_EQ(r.exit_code, 1) << r.output;
        EXPECT_NE(r.output.find(bad), std::string::npos) << r.output;
    }
    EXPECT_NE(run({"--taesd", small_model()}).output.find("TAESD"), std::string::npos);
}

TEST(CliOutputPaths, ReferenceNaming) {
    using V = std::vector<std::string>;
    EXPECT_EQ(output_paths("output.png", 1, -1), V{"output.png"});
    EXPECT_EQ(output_paths("output.png", 3, -1),
              (V{"output_0.png", "output_1.png", "output_2.png"}));
    EXPECT_EQ(output_paths("a/out.JPG", 2, 4), (V{"a/out_4.JPG", "a/out_5.JPG"}));
    EXPECT_EQ(output_paths("out_%03d.png", 2, -1), (V{"out_000.png", "out_001.png"}));
    EXPECT_EQ(output_paths("out_%d.webp", 2, 7), (V{"out_7.webp", "out_8.webp"}));
    EXPECT_EQ(output_paths("100%%_%d.png", 1, -1), V{"100%_0.png"});
    EXPECT_EQ(output_paths("frame%d", 1, -1), V{"frame0.png"});
    EXPECT_EQ(output_paths("out.xyz", 1, -1), V{"out.xyz.png"});
    EXPECT_EQ(output_paths("out.bmp", 2, -1), (V{"out_0.bmp", "out_1.bmp"}));
    EXPECT_EQ(output_paths("noext", 2, -1), (V{"noext_0.png", "noext_1.png"}));
    EXPECT_EQ(output_paths("dir.v1/out", 1, -1), V{"dir.v1/out.png"});
    EXPECT_FALSE(has_sequence_specifier("100%%d.png"));
    EXPECT_FALSE(has_sequence_specifier("x%1234d.png"));
    EXPECT_TRUE(has_sequence_specifier("x%1234d_%5d.png"));
    EXPECT_EQ(format_sequence("%%%d", 3), "%3");
}

TEST(CliOutput, WritesABatchWithParameters) {
    const std::string dir = sd::test::temp_path("batch");
    const std::string out = dir + "/img_%02d.png";
    const char* argv[] = {"sd-cli", "-m",       "m/model.safetensors", "-p", "a cat", "-s", "10",
                          "-o",     out.c_str()};
    CliParams p;
    parse_command_line(9, argv, p);
    GenerationRequest r = resolve_request(p);
    EXPECT_EQ(r.seed, 10);
    auto* images = static_cast<sd_image_t*>(std::calloc(2, sizeof(sd_image_t)));
    for (int i = 0; i < 2; ++i) {
        images[i] = {8, 8, 3, static_cast<uint8_t*>(std::calloc(8 * 8 * 3, 1))};
        images[i].data[0] = static_cast<uint8_t>(i);
    }
    ImageList list(images, 2);
    ASSERT_TRUE(save_results(p, r, list));
    for (int i = 0; i < 2; ++i) {
        const std::string path = dir + "/img_0" + std::to_string(i) + ".png";
        const std::string text = sd::image::read_text(path)["parameters"];
        EXPECT_EQ(text.find("a cat\nSteps: 20, CFG scale: 7.000000"), 0u) << text;
        EXPECT_NE(text.find("Seed: " + std::to_string(10 + i) + ","), std::string::npos) << text;
        EXPECT_EQ(sd::image::read_image(path, 3).pixels[0], i);
    }
    CliParams quiet = p;
    quiet.embed_image_metadata = false;
    quiet.output_path = dir + "/plain.png";
    ImageList one = ImageList::copy_of(sd::image::read_image(dir + "/img_00.png", 3));
    ASSERT_TRUE(save_results(quiet, r, one));
    EXPECT_TRUE(sd::image::read_text(dir + "/plain.png").empty());
    CliParams random = p;
    random.seed = -1;
    EXPECT_EQ(resolve_request(random).seed, -1);  // drawn by the library (report_settled)
}

// What the command line leaves open the library settles, and the images' parameters name
// what ran: a random seed (image i: seed + i), the size on the model's grid, the model's
// sampler and scheduler. --tokenizer-dir with a comma in its path reaches the library typed.
TEST(CliGenerate, ParametersNameWhatTheLibrarySettled) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    const std::string tok = sd::test::temp_path("cli_a,b") + "/tok";
    std::filesystem::create_directories(tok);
    std::filesystem::copy(fixtures() + "/tokenizers", tok,
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
    const std::string dir = sd::test::temp_path("settled");
    const RunResult r =
        run_cli({"-m", model, "-p", "a cat", "-W", "40", "-H", "64", "--steps", "1", "-s", "-1",
                 "-b", "2", "--tokenizer-dir", tok, "-o", dir + "/img_%d.png"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("CLIP tokenizer: " + tok + "/clip (--tokenizer-dir)"),
              std::string::npos)
        << r.output;
    int64_t first_seed = -1;
    for (int i = 0; i < 2; ++i) {
        const std::string text =
            sd::image::read_text(dir + "/img_" + std::to_string(i) + ".png")["parameters"];
        const size_t at = text.find("Seed: ");
        ASSERT_NE(at, std::string::npos) << text;
        const int64_t seed = std::stoll(text.substr(at + 6));
        if (i == 0) first_seed = seed;
        EXPECT_GE(seed, 0) << text;
        EXPECT_EQ(seed, first_seed + i) << text;
        EXPECT_NE(text.find("Steps: 1, "), std::string::npos) << text;
        EXPECT_NE(text.find("Size: 64x64, "), std::string::npos) << text;
        EXPECT_NE(text.find("Sampler: euler_a discrete, "), std::string::npos) << text;
        const json meta = json::parse(text.substr(text.find("SDCPP: ") + 7));
        EXPECT_EQ(meta["seed"], seed);
        EXPECT_EQ(meta["width"], 64);
        EXPECT_EQ(meta["sampling"]["method"], "euler_a");
        EXPECT_EQ(meta["sampling"]["scheduler"], "discrete");
    }
}

TEST(CliRequest, LoraTagsAndPromptFiles) {
    const std::string dir = sd::test::temp_path("loras");
    std::filesystem::create_directories(dir + "/sub");
    std::ofstream(dir + "/style.safetensors") << "x";
    std::ofstream(dir + "/sub/detail.gguf") << "x";
    std::ofstream(dir + "/old_style.ckpt") << "x";
    CliParams p;
    p.lora_model_dir = dir;
    // A tag naming no file is an error naming it.
    p.prompt = "<lora:missing:0.5>a cat";
    try {
        resolve_request(p);
        ADD_FAILURE() << "expected an error";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("LoRA 'missing'"), std::string::npos) << e.what();
    }
    p.prompt =
        "a <lora:style:abc>cat <lora:style:0.8><lora:sub/detail:1>, "
        "<lora:|high_noise|style:1.5><lora:style:0.2><lora:bad>";
    GenerationRequest r = resolve_request(p);
    EXPECT_EQ(r.prompt, "a cat , <lora:bad>");
    EXPECT_EQ(r.prompt_with_lora, p.prompt);
    ASSERT_EQ(r.loras.size(), 3u);
    auto normal = [](const std::string& p) {
        return std::filesystem::path(p).lexically_normal().string();
    };
    EXPECT_EQ(r.loras[0].path, normal(dir + "/style.safetensors"));
    EXPECT_FLOAT_EQ(r.loras[0].multiplier, 1.0f);
    EXPECT_EQ(r.loras[1].path, normal(dir + "/sub/detail.gguf"));
    EXPECT_TRUE(r.loras[2].high_noise);
    EXPECT_FLOAT_EQ(r.loras[2].multiplier, 1.5f);
    // A .ckpt LoRA is looked up like the others.
    p.prompt = "<lora:old_style:0.7>a cat";
    r = resolve_request(p);
    ASSERT_EQ(r.loras.size(), 1u);
    EXPECT_EQ(r.loras[0].path, normal(dir + "/old_style.ckpt"));
    // An unclosed tag in a long prompt is plain text, not a crash; a prompt longer than
    // --max-prompt-tokens could take is refused before it is tokenized.
    p.prompt = "<lora:" + std::string(40000, 'x');
    EXPECT_EQ(resolve_request(p).prompt.size(), p.prompt.size());
    p.prompt = "<lora:" + std::string(1 << 20, 'x');
    try {
        resolve_request(p);
        ADD_FAILURE() << "expected an error";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("--max-prompt-tokens"), std::string::npos);
    }
    p.prompt_file = sd::test::write_temp("prompt.txt", "from a file\n");
    EXPECT_EQ(resolve_request(p).prompt, "from a file");
    p.prompt_file = "/nonexistent/prompt.txt";
    try {
        resolve_request(p);
        ADD_FAILURE() << "expected an error";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("--prompt-file"), std::string::npos);
    }
}

TEST(CliProgress, BarAndPlainLines) {
    EXPECT_EQ(ProgressBar::render(3, 20, 2.5f, false), "step 3/20 - 2.50s/it");
    EXPECT_EQ(ProgressBar::render(3, 20, 0.25f, false), "step 3/20 - 4.00it/s");
    const std::string bar = ProgressBar::render(10, 20, 0.5f, true);
    EXPECT_EQ(bar,
              "  |" + std::string(25, '=') + ">" + std::string(24, ' ') + "| 10/20 - 2.00it/s");
    EXPECT_EQ(ProgressBar::render(20, 20, 1.5f, true),
              "  |" + std::string(50, '=') + "| 20/20 - 1.50s/it");
}

// Shell-like words of a cases.tsv line (double quotes group words).
std::vector<std::string> split_args(const std::string& line) {
    std::vector<std::string> args;
    std::string word;
    bool quoted = false, any = false;
    for (char c : line) {
        if (c == '"') {
            quoted = !quoted;
            any = true;
        } else if (c == ' ' && !quoted) {
            if (any) args.push_back(word);
            word.clear();
            any = false;
        } else {
            word += c;
            any = true;
        }
    }
    if (any) args.push_back(word);
    return args;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
        s.replace(pos, from.size(), to);
    return s;
}

// Our parameters text for a reference case equals the reference program's, but for the
// generator (name, version, commit) recorded in its JSON.
void expect_reference_parameters(const std::string& folder, const std::string& id,
                                 const std::string& model_name, const std::string& extra_args) {
    std::ifstream cases(fixtures() + "/reference/" + folder + "/cases.tsv");
    std::string line, args;
    while (std::getline(cases, line))
        if (line.rfind(id + "\t", 0) == 0) args = line.substr(id.size() + 1);
    ASSERT_FALSE(args.empty()) << id;
    const std::string fx = sd::test::temp_path("fx");
    std::filesystem::create_directories(fx + "/loras");
    std::ofstream(fx + "/loras/lora_sd15_kohya_seed7.safetensors") << "x";
    args =
        replace_all(replace_all(args, "@FX@", fx), "@CASES@", fixtures() + "/reference/" + folder);
    std::vector<std::string> words = {"sd-cli", "-m", "/models/" + model_name};
    for (const std::string& w : split_args(extra_args + " " + args)) words.push_back(w);
    std::vector<const char*> argv;
    for (const std::string& w : words) argv.push_back(w.c_str());
    CliParams p;
    parse_command_line(static_cast<int>(argv.size()), argv.data(), p);
    GenerationRequest r = resolve_request(p);
    if (p.mode == Mode::Upscale) {
        sd::image::Image input = sd::image::read_image(p.init_image_path, 3);
        r.width = static_cast<int>(input.width);
        r.height = static_cast<int>(input.height);
    }
    const std::string ours = image_parameters(p, r, r.seed);
    const std::string theirs =
        sd::image::read_text(fixtures() + "/reference/" + folder + "/" + id + ".png")["parameters"];
    const size_t split_ours = ours.find("SDCPP: "), split_theirs = theirs.find("SDCPP: ");
    ASSERT_NE(split_theirs, std::string::npos);
    EXPECT_EQ(ours.substr(0, split_ours), theirs.substr(0, split_theirs)) << id;
    json a = json::parse(ours.substr(split_ours + 7)),
         b = json::parse(theirs.substr(split_theirs + 7));
    a.erase("generator");
    b.erase("generator");
    EXPECT_EQ(a.dump(), b.dump()) << id;
}

TEST(CliParameters, MatchTheReferenceImages) {
    expect_reference_parameters("sd15", "txt2img_euler", "sd15_f16.safetensors", "");
    expect_reference_parameters("sd15", "txt2img_euler_a", "sd15_f16.safetensors", "");
    expect_reference_parameters("sd15", "txt2img_dpmpp2m_karras", "sd15_f16.safetensors", "");
    expect_reference_parameters("sd15", "img2img_euler", "sd15_f16.safetensors", "");
    expect_reference_parameters("sd21", "sd21_dpmpp2m_v", "sd21_f16.safetensors", "");
    expect_reference_parameters("sdxl", "sdxl_dpmpp2m_karras", "sdxl_f16_seed3.safetensors", "");
    expect_reference_parameters("controlnet", "cn_edges", "sd15_f16.safetensors", "");
    expect_reference_parameters("taesd", "tae_euler", "sd15_f16.safetensors", "");
    expect_reference_parameters("lora", "lora_kohya", "sd15_f16.safetensors", "");
    expect_reference_parameters("esrgan", "upscale_x4", "sd15_f16.safetensors", "");
}

}  // namespace
}  // namespace cli

namespace cli {
namespace {

// A ControlNet file cut short, a file that is not a ControlNet, and control images that
// cannot be read: each one line naming the file, exit 1.
TEST(CliGenerate, ControlNetInputErrors) {
    const std::string model = sd::test::generated_checkpoint("sd15", "f16", 1);
    // The errors come before any weight is used: a sparse file of the layout serves.
    const std::string control = sd::test::temp_path("cn_sparse.safetensors");
    sd::test::run_or_fail("/usr/bin/python3 " + sd::test::tests_source_dir() +
                          "/tools/write_sparse_checkpoint.py " + fixtures() +
                          "/manifests/controlnet_sd15.tsv " + control);
    const std::string cut = sd::test::temp_path("cn_cut.safetensors");
    {
        std::ifstream in(control, std::ios::binary);
        std::vector<char> head(1 << 20);
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        std::ofstream(cut, std::ios::binary).write(head.data(), in.gcount());
    }
    const std::string garbage = sd::test::temp_path("cn_garbage.png");
    std::ofstream(garbage, std::ios::binary) << "not an image at all";
    const std::string edges = fixtures() + "/reference/controlnet/edges.png";
    const std::vector<std::string> base = {"-m",
                                           model,
                                           "--tokenizer-dir",
                                           fixtures() + "/tokenizers",
                                           "-W",
                                           "64",
                                           "-H",
                                           "64",
                                           "--steps",
                                           "1",
                                           "-o",
                                           sd::test::temp_path("cn_never.png")};
    const std::pair<std::vector<std::string>, std::string> cases[] = {
        {{"--control-net", cut, "--control-image", edges}, cut},
        {{"--control-net", model, "--control-image", edges}, "is not a ControlNet"},
        {{"--control-net", "/nonexistent/cn.safetensors"}, "/nonexistent/cn.safetensors"},
        {{"--control-net", control, "--control-image", garbage}, garbage},
        {{"--control-net", control, "--control-image", "/nonexistent/e.png"}, "/nonexistent/e.png"},
    };
    for (const auto& [extra, mention] : cases) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        const RunResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << mention << ": " << r.output;
        EXPECT_NE(r.output.find(mention), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("Segmentation"), std::string::npos) << r.output;
    }
}

}  // namespace
}  // namespace cli
