// Writes the seed inputs of fuzz/corpus/ with the engine's own writers and encoders:
//   make_seeds OUT   ->  OUT/safetensors, OUT/gguf, OUT/tokenizer, OUT/image, OUT/imatrix,
//                          OUT/lora_fit
// (the torch checkpoint and pickle seeds come from tests/io/write_torch_checkpoint.py over
// OUT/safetensors; scripts/fuzz.sh --seeds does both).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "image/image_io.h"
#include "io/imatrix.h"
#include "io/tensor_writer.h"
#include "ops/convert.h"
#include "tokenizer/clip_tokenizer.h"

namespace fs = std::filesystem;
using namespace sd;

namespace {

std::string g_out;

void put(const std::string& rel, const std::string& bytes) {
    fs::path p = fs::path(g_out) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void put(const std::string& rel, const std::vector<uint8_t>& bytes) {
    put(rel, std::string(bytes.begin(), bytes.end()));
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

Tensor ramp(const Shape& shape, float scale = 0.25f) {
    Tensor t = Tensor::empty(shape, DType::F32);
    for (int64_t i = 0; i < t.numel(); ++i)
        t.data<float>()[i] = scale * static_cast<float>(i % 13 - 6);
    return t;
}

OutputTensor out_of(const std::string& name, const Tensor& t) {
    return {name, t.dtype(), t.shape(), [t] { return t; }};
}

// A safetensors file written by hand: 8-byte length, JSON header, data.
std::string safetensors(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
}

void safetensors_seeds() {
    const std::string tmp = g_out + "/tmp.safetensors";
    write_safetensors(
        tmp,
        {out_of("model.w", ramp({2, 3})), out_of("model.h", convert(ramp({4}), DType::F16)),
         out_of("model.b", convert(ramp({2, 2}), DType::BF16)), out_of("empty", ramp({0, 3}))},
        {{"format", "pt"}});
    put("safetensors/plain.safetensors", slurp(tmp));
    fs::remove(tmp);
    put("safetensors/raw_types.safetensors",
        safetensors(R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
                    R"("l":{"dtype":"I64","shape":[1],"data_offsets":[16,24]},)"
                    R"("s":{"dtype":"I16","shape":[2],"data_offsets":[24,28]},)"
                    R"("c":{"dtype":"I8","shape":[1],"data_offsets":[28,29]},)"
                    R"("u":{"dtype":"U8","shape":[1],"data_offsets":[29,30]},)"
                    R"("q":{"dtype":"BOOL","shape":[1],"data_offsets":[30,31]},)"
                    R"("e":{"dtype":"F8_E4M3","shape":[1,1],"data_offsets":[31,32]},)"
                    R"("m":{"dtype":"F8_E5M2","shape":[],"data_offsets":[32,33]},)"
                    R"("i":{"dtype":"I32","shape":[1],"data_offsets":[33,37]},)"
                    R"("__metadata__":{"k":"v"}})",
                    std::string(37, '\x41')));
    put("safetensors/index.json",
        std::string(R"({"metadata":{"total_size":12},"weight_map":{"a":"shard.safetensors",)"
                    R"("b":"shard.safetensors"}})"));
}

void gguf_seeds() {
    Tensor q8 = convert(ramp({2, 32}), DType::Q8_0);
    Tensor q4 = convert(ramp({1, 64}), DType::Q4_0);
    Tensor q4k = convert(ramp({1, 256}), DType::Q4_K);
    Tensor q6k = convert(ramp({1, 256}), DType::Q6_K);
    Tensor i32 = Tensor::zeros({3}, DType::I32);
    std::map<std::string, MetadataValue> meta;
    meta["general.name"] = {std::string("fuzz seed")};
    meta["u"] = {uint64_t{7}};
    meta["i"] = {int64_t{-3}};
    meta["f"] = {0.5};
    meta["b"] = {true};
    meta["nested"] = {MetadataArray{{MetadataArray{{int64_t{1}}}}, {MetadataArray{}}}};
    const std::string tmp = g_out + "/tmp.gguf";
    write_gguf(tmp,
               {out_of("f32", ramp({2, 3})), out_of("f16", convert(ramp({4}), DType::F16)),
                out_of("q8_0", q8), out_of("q4_0", q4), out_of("q4_K", q4k), out_of("q6_K", q6k),
                out_of("i32", i32)},
               meta, 64);
    put("gguf/quant.gguf", slurp(tmp));
    write_gguf(tmp, {out_of("bf16", convert(ramp({3}), DType::BF16))}, {}, 32);
    put("gguf/small.gguf", slurp(tmp));
    fs::remove(tmp);
}

// GPT-2's bytes_to_unicode() as UTF-8.
std::string byte_symbol(int b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    int cp = b;
    if (!printable) {
        cp = 256;
        for (int i = 0; i < b; ++i) {
            if (!((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE)) ++cp;
        }
    }
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += static_cast<char>(c);
    }
    return out;
}

// A byte-level vocabulary: the 512 byte symbols, a few merges, the two special tokens.
void tokenizer_seeds() {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_symbol(b));
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_symbol(b) + "</w>");
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"c", "a"},      {"ca", "t</w>"}, {"t", "h"},  {"th", "e</w>"}, {"a", "n"},
        {"an", "d</w>"}, {"p", "h"},      {"ph", "o"}, {"t", "o</w>"},  {"pho", "to</w>"}};
    std::string merges_txt = "#version: 0.2\n";
    for (const auto& [a, b] : merges) {
        if (std::find(tokens.begin(), tokens.end(), a + b) == tokens.end()) tokens.push_back(a + b);
        merges_txt += a + " " + b + "\n";
    }
    tokens.push_back("<|startoftext|>");
    tokens.push_back("<|endoftext|>");
    std::string vocab = "{";
    for (size_t i = 0; i < tokens.size(); ++i)
        vocab +=
            (i ? "," : "") + std::string("\"") + json_escape(tokens[i]) + "\":" + std::to_string(i);
    vocab += "}";
    const ClipTokenizer tok = ClipTokenizer::from_strings(vocab, merges_txt, "seed");
    const std::string sep(1, '\0');
    put("tokenizer/ascii", vocab + sep + merges_txt + sep + "a photo of the cat and 42 dogs, 'll");
    put("tokenizer/unicode",
        vocab + sep + merges_txt + sep +
            "Café <|startoftext|> naïve \xE2\x80\x94 \xF0\x9F\x90\x88 \xFF\xFE bad");
    put("tokenizer/crlf",
        vocab + sep + "#version: 0.2\r\nc a\r\nca t</w>\r\n" + sep + "CAT  cat\tca");

    // The same vocabulary as GGUF metadata, for the GGUF target.
    const std::string tmp = g_out + "/tmp.gguf";
    write_gguf(tmp, {out_of("w", ramp({2}))}, tok.to_gguf_metadata());
    put("gguf/clip_vocab.gguf", slurp(tmp));
    fs::remove(tmp);
}

image::Image pattern(uint32_t w, uint32_t h, uint32_t c) {
    image::Image im;
    im.width = w;
    im.height = h;
    im.channels = c;
    im.pixels.resize(static_cast<size_t>(w) * h * c);
    for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = static_cast<uint8_t>(i * 37);
    return im;
}

uint32_t le(std::string& s, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
    return v;
}

// A bottom-up BMP with the 40-byte info header; `palette` entries of 4 bytes each.
std::string bmp(int w, int h, int bpp, int palette, uint32_t compression = 0) {
    const int row = ((w * bpp + 31) / 32) * 4;
    const uint32_t offset = 14 + 40 + 4 * palette;
    std::string s = "BM";
    le(s, offset + row * h, 4);
    le(s, 0, 4);
    le(s, offset, 4);
    le(s, 40, 4);
    le(s, w, 4);
    le(s, h, 4);
    le(s, 1, 2);
    le(s, bpp, 2);
    le(s, compression, 4);
    le(s, row * h, 4);
    le(s, 2835, 4);
    le(s, 2835, 4);
    le(s, palette, 4);
    le(s, 0, 4);
    for (int i = 0; i < palette; ++i) le(s, 0x00102030u * i, 4);
    for (int i = 0; i < row * h; ++i) s += static_cast<char>(palette ? i % palette : i * 29);
    return s;
}

void image_seeds() {
    const std::string params = "a cat\nSteps: 20, Sampler: euler, Seed: 42";
    put("image/rgb.png", image::encode_image(image::Format::Png, pattern(5, 3, 3), params));
    put("image/grey.png", image::encode_image(image::Format::Png, pattern(4, 4, 1), ""));
    put("image/rgba.png", image::encode_image(image::Format::Png, pattern(3, 2, 4), "x"));
    put("image/rgb.jpg", image::encode_image(image::Format::Jpeg, pattern(9, 7, 3), params, 50));
    put("image/grey.jpg", image::encode_image(image::Format::Jpeg, pattern(8, 8, 1), "", 90));
    put("image/rgb.webp", image::encode_image(image::Format::Webp, pattern(6, 5, 3), params, 50));
    put("image/rgba.webp", image::encode_image(image::Format::Webp, pattern(4, 3, 4), "", 100));
    put("image/24.bmp", bmp(3, 2, 24, 0));
    put("image/32.bmp", bmp(2, 2, 32, 0));
    put("image/16.bmp", bmp(3, 3, 16, 0));
    put("image/8.bmp", bmp(4, 2, 8, 4));
    put("image/4.bmp", bmp(5, 2, 4, 16));
    put("image/1.bmp", bmp(9, 2, 1, 2));
}

// An importance matrix of two entries (a Linear's 8 columns, a 3x3 conv's 18) in both
// layouts imatrix::save writes.
void imatrix_seeds() {
    imatrix::clear();
    std::vector<double> sums(18);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] = 0.5 * static_cast<double>(i + 1);
    imatrix::add("blk.0.attn_q.weight", sums.data(), 8, 4);
    imatrix::add("conv.weight", sums.data(), 18, 2);
    const std::string tmp = (fs::path(g_out) / "imatrix.tmp").string();
    for (const char* name : {"legacy.dat", "llama.gguf"}) {
        const std::string file =
            tmp + (std::string(name).find(".gguf") != std::string::npos ? ".gguf" : "");
        imatrix::save(file);
        put(std::string("imatrix/") + name, slurp(file));
        fs::remove(file);
    }
    imatrix::clear();
}

// LoRA files of each module kind, named for the weights of fuzz_lora_fit's model: kohya
// low-rank with alpha (a Linear and a 3x3 conv), a Tucker core, DoRA, PEFT names on FLUX's fused
// qkv and swapped adaLN, SD3 and Wan names, LoHa, LoKr, a full diff, and one that fits nothing.
void lora_seeds() {
    using Module = std::vector<std::pair<std::string, Shape>>;
    auto lora = [](const std::string& name, const Module& tensors) {
        const std::string tmp = (fs::path(g_out) / "lora.tmp.safetensors").string();
        std::vector<OutputTensor> out;
        for (const auto& [key, shape] : tensors) out.push_back(out_of(key, ramp(shape, 0.05f)));
        write_safetensors(tmp, out, {{"ss_network_module", "networks.lora"}});
        put("lora_fit/" + name + ".safetensors", slurp(tmp));
        fs::remove(tmp);
    };
    const std::string te = "lora_te_text_model_encoder_layers_0_self_attn_q_proj";
    const std::string conv = "lora_unet_down_blocks_0_resnets_0_conv1";
    lora("kohya", {{te + ".lora_down.weight", {4, 8}},
                   {te + ".lora_up.weight", {8, 4}},
                   {te + ".alpha", {}},
                   {conv + ".lora_down.weight", {4, 8, 3, 3}},
                   {conv + ".lora_up.weight", {8, 4, 1, 1}}});
    lora("tucker", {{conv + ".lora_down.weight", {4, 8, 1, 1}},
                    {conv + ".lora_mid.weight", {4, 4, 3, 3}},
                    {conv + ".lora_up.weight", {8, 4, 1, 1}}});
    lora("dora", {{te + ".lora_down.weight", {2, 8}},
                  {te + ".lora_up.weight", {8, 2}},
                  {te + ".dora_scale", {8, 1}}});
    lora("flux_peft", {{"transformer.transformer_blocks.0.attn.to_q.lora_A.weight", {4, 8}},
                       {"transformer.transformer_blocks.0.attn.to_q.lora_B.weight", {8, 4}},
                       {"transformer.single_transformer_blocks.0.proj_mlp.lora_A.weight", {4, 8}},
                       {"transformer.single_transformer_blocks.0.proj_mlp.lora_B.weight", {16, 4}},
                       {"transformer.norm_out.linear.lora_A.weight", {4, 8}},
                       {"transformer.norm_out.linear.lora_B.weight", {16, 4}}});
    lora("sd3_peft", {{"transformer.transformer_blocks.0.attn.to_v.lora_A.weight", {2, 8}},
                      {"transformer.transformer_blocks.0.attn.to_v.lora_B.weight", {8, 2}}});
    lora("wan", {{"diffusion_model.blocks.0.self_attn.q.lora_A.weight", {2, 8}},
                 {"diffusion_model.blocks.0.self_attn.q.lora_B.weight", {8, 2}}});
    lora("loha", {{"lora_unet_blocks_0_self_attn_q.hada_w1_a", {8, 2}},
                  {"lora_unet_blocks_0_self_attn_q.hada_w1_b", {2, 8}},
                  {"lora_unet_blocks_0_self_attn_q.hada_w2_a", {8, 2}},
                  {"lora_unet_blocks_0_self_attn_q.hada_w2_b", {2, 8}},
                  {"lora_unet_blocks_0_self_attn_q.alpha", {}}});
    lora("lokr", {{"lora_unet_single_blocks_0_linear1.lokr_w1", {4, 2}},
                  {"lora_unet_single_blocks_0_linear1.lokr_w2_a", {10, 2}},
                  {"lora_unet_single_blocks_0_linear1.lokr_w2_b", {2, 4}}});
    lora("diff", {{"lora_unet_input_blocks_1_1_proj_in.diff", {8, 8, 1, 1}},
                  {"diffusion_model.out.0.diff", {8}}});
    lora("misfit", {{te + ".lora_down.weight", {4, 768}}, {te + ".lora_up.weight", {8, 4}}});
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
        return 2;
    }
    g_out = argv[1];
    fs::create_directories(g_out);
    try {
        safetensors_seeds();
        gguf_seeds();
        tokenizer_seeds();
        image_seeds();
        imatrix_seeds();
        lora_seeds();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
