// LoRA files against a model: the header-only fit check (lora_fit, check_lora_fits: what a
// server runs while it parses a request's LoRA tags) and the patches applying builds
// (add_lora_patches, merged and at run time, and for a high-noise expert). Input: the LoRA
// file, read as its first bytes say (safetensors, GGUF, PyTorch zip). The model is fixed: a
// few weights of each family whose names LoRAs map onto (SD 1.x UNet and text encoder, FLUX's
// fused qkv and swapped adaLN, SD3's joint blocks, Wan's two experts).
// Besides the sanitizers, two rules: the fit counts the modules that applying patches, and a
// merged weight has the shape of the model weight it replaces.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <typeinfo>

#include "adapters/lora_apply.h"
#include "adapters/lora_fit.h"
#include "base/log.h"
#include "fuzz_util.h"
#include "io/tensor_writer.h"

namespace {

using sd::DType;
using sd::Shape;
using sd::Tensor;

const sd::ModelFiles& model() {
    static const sd::ModelFiles* files = [] {
        sd::set_log_level(sd::LogLevel::Error);  // each input logs its counts at Info / Warn
        const std::pair<const char*, Shape> weights[] = {
            {"cond_stage_model.transformer.text_model.encoder.layers.0.self_attn.q_proj.weight",
             {8, 8}},
            {"model.diffusion_model.input_blocks.1.0.in_layers.2.weight", {8, 8, 3, 3}},
            {"model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight",
             {8, 12}},
            {"model.diffusion_model.input_blocks.1.1.proj_in.weight", {8, 8, 1, 1}},
            {"model.diffusion_model.out.0.weight", {8}},
            {"model.diffusion_model.double_blocks.0.img_attn.qkv.weight", {24, 8}},
            {"model.diffusion_model.single_blocks.0.linear1.weight", {40, 8}},
            {"model.diffusion_model.final_layer.adaLN_modulation.1.weight", {16, 8}},
            {"model.diffusion_model.joint_blocks.0.x_block.attn.qkv.weight", {24, 8}},
            {"model.diffusion_model.blocks.0.self_attn.q.weight", {8, 8}},
            {"model.high_noise_diffusion_model.blocks.0.self_attn.q.weight", {8, 8}},
        };
        std::vector<sd::OutputTensor> out;
        for (const auto& [name, shape] : weights) {
            Tensor t = Tensor::empty(shape, DType::F32);
            for (int64_t i = 0; i < t.numel(); ++i)
                t.data<float>()[i] = 0.125f * static_cast<float>(i % 7 - 3);
            out.push_back({name, DType::F32, shape, [t] { return t; }});
        }
        const std::string path = sd::fuzz::private_dir() + "/model.safetensors";
        sd::write_safetensors(path, out, {});
        auto* m = new sd::ModelFiles;
        m->add(path, sd::ModelRole::Checkpoint);
        return m;
    }();
    return *files;
}

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "finding: %s\n", what);
    std::abort();
}

// Applies the LoRA as a generation would; returns how many of its tensors patched a weight
// (0 when none fits, which add_lora_patches reports as an sd::Error).
size_t apply(const std::string& path, sd::LoraMode mode, bool high_noise) {
    sd::WeightPatches patches;
    sd::LoraStats stats;
    try {
        stats = sd::add_lora_patches(model(), {path, 0.75f, high_noise}, mode, "fuzz", patches);
    } catch (const sd::Error&) {
        return 0;
    }
    for (const auto& [name, patch] : patches) {
        if (patch.weight.defined()) {
            const sd::TensorRecord* w = model().find(name);
            if (!w || w->shape != patch.weight.shape()) finding("a merged weight of another shape");
            sd::fuzz::sink += sd::fuzz::read_through(patch.weight);
        }
        for (const sd::LowRankTerm& t : patch.terms)
            sd::fuzz::sink += t.down.numel() + t.up.numel() + (t.mid.defined() ? t.mid.numel() : 0);
        for (const Tensor& d : patch.deltas) sd::fuzz::sink += sd::fuzz::read_through(d);
    }
    return stats.applied;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = sd::fuzz::write_file("lora.safetensors", data, size);
    return sd::fuzz::run_one([&] {
        sd::LoraFit fit;
        try {
            fit = sd::lora_fit(path, model());
        } catch (const sd::Error&) {
            // Unreadable as a tensor file: applying must refuse it as well.
            if (apply(path, sd::LoraMode::Immediately, false) != 0)
                finding("a file lora_fit cannot read patched a weight");
            throw;
        }
        if (fit.fitting != apply(path, sd::LoraMode::Immediately, false))
            finding("lora_fit counts other modules than applying patches");
        if (fit.fitting != apply(path, sd::LoraMode::AtRuntime, false))
            finding("merged and run-time patches count other modules");
        apply(path, sd::LoraMode::AtRuntime, true);
        sd::check_lora_fits(path, model(), "the fuzz model");
    });
}
