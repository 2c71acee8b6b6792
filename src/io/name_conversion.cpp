#include "io/name_conversion.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

#include "base/error.h"

namespace sd {
namespace {

// The canonical prefixes of the roles converted here (component_roles.cpp holds them all,
// and the other prefixes files carry them under).
const std::string_view kUnetPrefix = canonical_prefix(ModelRole::DiffusionModel);
const std::string_view kVaePrefix = canonical_prefix(ModelRole::Vae);
const std::string_view kTextPrefix = canonical_prefix(ModelRole::TextEncoder);
const std::string_view kText2Prefix = canonical_prefix(ModelRole::TextEncoder2);
const std::string_view kT5Prefix = canonical_prefix(ModelRole::T5);
const std::string_view kLlmPrefix = canonical_prefix(ModelRole::Llm);

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

bool consume(std::string_view& s, std::string_view prefix) {
    if (!starts_with(s, prefix)) return false;
    s.remove_prefix(prefix.size());
    return true;
}

// Reads "N." (or a final "N") from the front of s.
bool consume_index(std::string_view& s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc() || end == s.data()) return false;
    s.remove_prefix(static_cast<size_t>(end - s.data()));
    return s.empty() || consume(s, ".");
}

std::string str(std::string_view s) {
    return std::string(s);
}

// Renames the first segment(s) of `rest` by a table of (from, to) prefixes.
std::string rename_prefix(
    std::string_view rest,
    std::initializer_list<std::pair<std::string_view, std::string_view>> table) {
    for (const auto& [from, to] : table) {
        if (starts_with(rest, from)) return str(to) + str(rest.substr(from.size()));
    }
    return str(rest);
}

std::string unet_resnet(std::string_view rest) {
    return rename_prefix(rest, {{"norm1.", "in_layers.0."},
                                {"conv1.", "in_layers.2."},
                                {"time_emb_proj.", "emb_layers.1."},
                                {"norm2.", "out_layers.0."},
                                {"conv2.", "out_layers.3."},
                                {"conv_shortcut.", "skip_connection."}});
}

std::string vae_resnet(std::string_view rest) {
    return rename_prefix(rest, {{"conv_shortcut.", "nin_shortcut."}});
}

std::string vae_attention(std::string_view rest) {
    return rename_prefix(rest, {{"group_norm.", "norm."},
                                {"to_q.", "q."},
                                {"query.", "q."},
                                {"to_k.", "k."},
                                {"key.", "k."},
                                {"to_v.", "v."},
                                {"value.", "v."},
                                {"to_out.0.", "proj_out."},
                                {"proj_attn.", "proj_out."}});
}

bool is_diffusers_unet(const std::vector<TensorRecord>& records, std::string_view prefix) {
    for (const TensorRecord& r : records) {
        std::string_view n = r.name;
        if (consume(n, prefix) &&
            (starts_with(n, "down_blocks.") || starts_with(n, "time_embedding.")))
            return true;
    }
    return false;
}

std::string vae_diffusers_to_ldm_impl(const std::string& name, int n_up_blocks) {
    std::string_view s = name;
    std::string side;
    if (consume(s, "encoder."))
        side = "encoder.";
    else if (consume(s, "decoder."))
        side = "decoder.";
    else
        return name;
    // FLUX.2's ae.safetensors keeps the quant convs inside its encoder / decoder.
    if (side == "encoder." && starts_with(s, "quant_conv.")) return str(s);
    if (side == "decoder." && starts_with(s, "post_quant_conv.")) return str(s);
    int i = 0, j = 0;
    std::string_view rest = s;
    if (consume(rest, "down_blocks.") && consume_index(rest, i)) {
        if (consume(rest, "resnets.") && consume_index(rest, j)) {
            return side + "down." + std::to_string(i) + ".block." + std::to_string(j) + "." +
                   vae_resnet(rest);
        }
        if (consume(rest, "downsamplers.0."))
            return side + "down." + std::to_string(i) + ".downsample." + str(rest);
        return name;
    }
    rest = s;
    if (consume(rest, "up_blocks.") && consume_index(rest, i)) {
        int level = n_up_blocks - 1 - i;
        if (consume(rest, "resnets.") && consume_index(rest, j)) {
            return side + "up." + std::to_string(level) + ".block." + std::to_string(j) + "." +
                   vae_resnet(rest);
        }
        if (consume(rest, "upsamplers.0."))
            return side + "up." + std::to_string(level) + ".upsample." + str(rest);
        return name;
    }
    rest = s;
    if (consume(rest, "mid_block.")) {
        if (consume(rest, "resnets.") && consume_index(rest, j)) {
            return side + "mid.block_" + std::to_string(j + 1) + "." + vae_resnet(rest);
        }
        if (consume(rest, "attentions.0.")) return side + "mid.attn_1." + vae_attention(rest);
        return name;
    }
    rest = s;
    if (consume(rest, "conv_norm_out.")) return side + "norm_out." + str(rest);
    return name;
}

// ---- llama.cpp's T5 GGUF names -> Hugging Face T5EncoderModel names ----

std::string t5_from_llama_cpp(std::string_view s) {
    if (consume(s, "enc.blk.")) {
        int i = 0;
        if (!consume_index(s, i)) return "enc.blk." + str(s);
        const std::string layer =
            rename_prefix(s, {{"attn_q.", "layer.0.SelfAttention.q."},
                              {"attn_k.", "layer.0.SelfAttention.k."},
                              {"attn_v.", "layer.0.SelfAttention.v."},
                              {"attn_o.", "layer.0.SelfAttention.o."},
                              {"attn_rel_b.", "layer.0.SelfAttention.relative_attention_bias."},
                              {"attn_norm.", "layer.0.layer_norm."},
                              {"ffn_gate.", "layer.1.DenseReluDense.wi_0."},
                              {"ffn_up.", "layer.1.DenseReluDense.wi_1."},
                              {"ffn_down.", "layer.1.DenseReluDense.wo."},
                              {"ffn_norm.", "layer.1.layer_norm."}});
        return "encoder.block." + std::to_string(i) + "." + layer;
    }
    return rename_prefix(
        s, {{"token_embd.", "shared."}, {"enc.output_norm.", "encoder.final_layer_norm."}});
}

// ---- llama.cpp's LLM GGUF names -> Hugging Face causal-LM names (Qwen2/3, Llama) ----

// ComfyUI's prefix of an LLM text encoder, "text_encoders.<name>.transformer." or
// "text_encoders.<name>." (qwen3_4b, qwen25_7b, qwen3vl_4b, ...), before Hugging Face names:
// true with `rest` the names below it. (clip_l, clip_g and t5xxl are aliases of their roles.)
bool comfy_llm_name(std::string_view name, std::string_view& rest) {
    std::string_view s = name;
    if (!consume(s, "text_encoders.")) return false;
    const size_t dot = s.find('.');
    if (dot == std::string_view::npos) return false;
    s.remove_prefix(dot + 1);
    consume(s, "transformer.");
    if (!starts_with(s, "model.") && !starts_with(s, "lm_head.") && !starts_with(s, "visual."))
        return false;
    rest = s;
    return true;
}

std::string llm_from_llama_cpp(std::string_view s) {
    comfy_llm_name(s, s);  // a --llm file with ComfyUI's prefix
    if (consume(s, "blk.")) {
        int i = 0;
        if (!consume_index(s, i)) return "blk." + str(s);
        const std::string layer = rename_prefix(s, {{"attn_norm.", "input_layernorm."},
                                                    {"attn_q_norm.", "self_attn.q_norm."},
                                                    {"attn_k_norm.", "self_attn.k_norm."},
                                                    {"attn_q.", "self_attn.q_proj."},
                                                    {"attn_k.", "self_attn.k_proj."},
                                                    {"attn_v.", "self_attn.v_proj."},
                                                    {"attn_output.", "self_attn.o_proj."},
                                                    {"ffn_norm.", "post_attention_layernorm."},
                                                    {"ffn_gate.", "mlp.gate_proj."},
                                                    {"ffn_up.", "mlp.up_proj."},
                                                    {"ffn_down.", "mlp.down_proj."}});
        return "model.layers." + std::to_string(i) + "." + layer;
    }
    return rename_prefix(s, {{"token_embd.", "model.embed_tokens."},
                             {"output_norm.", "model.norm."},
                             {"output.", "lm_head."}});
}

// ---- OpenCLIP text encoder -> Hugging Face CLIPTextModel names ----

std::string openclip_layer(std::string_view rest) {
    return rename_prefix(rest, {{"ln_1.", "layer_norm1."},
                                {"ln_2.", "layer_norm2."},
                                {"mlp.c_fc.", "mlp.fc1."},
                                {"mlp.c_proj.", "mlp.fc2."},
                                {"attn.out_proj.", "self_attn.out_proj."}});
}

// Appends the records that OpenCLIP tensor `r` (its name already stripped to `s`) becomes,
// under `target` (kTextPrefix or kText2Prefix).
void convert_openclip(TensorRecord r, std::string_view s, std::string_view target,
                      std::vector<TensorRecord>& out) {
    const std::string text_model = str(target) + "text_model.";
    int layer = 0;
    std::string_view rest = s;
    if (consume(rest, "transformer.resblocks.") && consume_index(rest, layer)) {
        std::string base = text_model + "encoder.layers." + std::to_string(layer) + ".";
        bool weight = rest == "attn.in_proj_weight", bias = rest == "attn.in_proj_bias";
        if (weight || bias) {
            SD_CHECK(r.shape.size() >= 1 && r.shape[0] % 3 == 0,
                     "tensor '%s' of shape %s is not a fused q/k/v projection", r.name.c_str(),
                     r.shape.to_string().c_str());
            const int64_t part = r.shape[0] / 3;
            const char* names[3] = {"q_proj", "k_proj", "v_proj"};
            for (int k = 0; k < 3; ++k) {
                TensorRecord piece = r;
                piece.name = base + "self_attn." + names[k] + (weight ? ".weight" : ".bias");
                piece.shape[0] = part;
                piece.offset = r.offset + k * part * r.strides[0];
                out.push_back(std::move(piece));
            }
            return;
        }
        r.name = base + openclip_layer(rest);
        out.push_back(std::move(r));
        return;
    }
    if (s == "token_embedding.weight")
        r.name = text_model + "embeddings.token_embedding.weight";
    else if (s == "positional_embedding")
        r.name = text_model + "embeddings.position_embedding.weight";
    else if (consume(rest, "ln_final."))
        r.name = text_model + "final_layer_norm." + str(rest);
    else if (s == "logit_scale")
        return;  // the image-text contrastive temperature: unused
    else if (s == "text_projection") {
        // OpenCLIP computes x @ P, yet the reference program applies P as a Linear weight
        // (x @ P^T), as it does Hugging Face's text_projection.weight; SDXL's reference
        // images agree (64.9 vs 64.5 dB), so P is kept as stored.
        r.name = str(target) + "text_projection.weight";
    } else {
        r.name = str(target) + str(s);
    }
    out.push_back(std::move(r));
}

bool is_openclip_name(std::string_view s) {
    return starts_with(s, "transformer.resblocks.") || s == "token_embedding.weight" ||
           s == "positional_embedding" || starts_with(s, "ln_final.") || s == "logit_scale" ||
           s == "text_projection";
}

// A text encoder of a separate file or a checkpoint, from HF or OpenCLIP names, under
// `target` (kTextPrefix: the first or only one; kText2Prefix: SDXL's second).
void convert_text_encoder(TensorRecord r, std::string_view s, std::string_view target,
                          std::vector<TensorRecord>& out) {
    if (is_openclip_name(s)) {
        convert_openclip(std::move(r), s, target, out);
        return;
    }
    consume(s, "transformer.");
    // Older transformers releases saved CLIPTextModel without the "text_model." level.
    if (starts_with(s, "embeddings.") || starts_with(s, "encoder.") ||
        starts_with(s, "final_layer_norm.")) {
        r.name = str(target) + "text_model." + str(s);
    } else {
        r.name = str(target) + str(s);
    }
    out.push_back(std::move(r));
}

// diffusers' VAE attention projections are Linear [C, C]; the original uses 1x1 convs.
void reshape_vae_attention(TensorRecord& r) {
    static const std::set<std::string_view> kProj = {"q.weight", "k.weight", "v.weight",
                                                     "proj_out.weight"};
    size_t at = r.name.find("attn_1.");
    if (at == std::string::npos || r.shape.size() != 2) return;
    if (!kProj.count(std::string_view(r.name).substr(at + 7))) return;
    r.shape.push_back(1);
    r.shape.push_back(1);
    r.strides.push_back(1);
    r.strides.push_back(1);
}

int count_vae_up_blocks(const std::vector<TensorRecord>& records) {
    int n = 0;
    for (const TensorRecord& r : records) {
        size_t at = r.name.find("decoder.up_blocks.");
        if (at == std::string::npos) continue;
        std::string_view s = std::string_view(r.name).substr(at + 18);
        int i = 0;
        if (consume_index(s, i)) n = std::max(n, i + 1);
    }
    return n > 0 ? n : 4;
}

std::set<int> unet_up_blocks_with_attention(const std::vector<TensorRecord>& records) {
    std::set<int> out;
    for (const TensorRecord& r : records) {
        size_t at = r.name.find("up_blocks.");
        if (at == std::string::npos) continue;
        std::string_view s = std::string_view(r.name).substr(at + 10);
        int i = 0;
        if (consume_index(s, i) && starts_with(s, "attentions.")) out.insert(i);
    }
    return out;
}

}  // namespace

std::string unet_diffusers_to_ldm(const std::string& name, bool up_block_has_attention) {
    std::string_view s = name;
    if (consume(s, "time_embedding.linear_1.")) return "time_embed.0." + str(s);
    if (consume(s, "time_embedding.linear_2.")) return "time_embed.2." + str(s);
    if (consume(s, "add_embedding.linear_1.")) return "label_emb.0.0." + str(s);
    if (consume(s, "add_embedding.linear_2.")) return "label_emb.0.2." + str(s);
    if (consume(s, "conv_in.")) return "input_blocks.0.0." + str(s);
    if (consume(s, "conv_norm_out.")) return "out.0." + str(s);
    if (consume(s, "conv_out.")) return "out.2." + str(s);
    // Every level has two resnets (layers_per_block = 2 in SD 1.x, 2.x and XL), so the
    // original numbers three input blocks a level: resnet, resnet, downsampler.
    int i = 0, j = 0;
    std::string_view rest = s;
    if (consume(rest, "down_blocks.") && consume_index(rest, i)) {
        if (consume(rest, "resnets.") && consume_index(rest, j)) {
            return "input_blocks." + std::to_string(3 * i + j + 1) + ".0." + unet_resnet(rest);
        }
        if (consume(rest, "attentions.") && consume_index(rest, j)) {
            return "input_blocks." + std::to_string(3 * i + j + 1) + ".1." + str(rest);
        }
        if (consume(rest, "downsamplers.0.conv."))
            return "input_blocks." + std::to_string(3 * (i + 1)) + ".0.op." + str(rest);
        return name;
    }
    rest = s;
    if (consume(rest, "mid_block.")) {
        if (consume(rest, "resnets.") && consume_index(rest, j)) {
            return "middle_block." + std::to_string(2 * j) + "." + unet_resnet(rest);
        }
        if (consume(rest, "attentions.0.")) return "middle_block.1." + str(rest);
        return name;
    }
    rest = s;
    if (consume(rest, "up_blocks.") && consume_index(rest, i)) {
        if (consume(rest, "resnets.") && consume_index(rest, j)) {
            return "output_blocks." + std::to_string(3 * i + j) + ".0." + unet_resnet(rest);
        }
        if (consume(rest, "attentions.") && consume_index(rest, j)) {
            return "output_blocks." + std::to_string(3 * i + j) + ".1." + str(rest);
        }
        if (consume(rest, "upsamplers.0.")) {
            return "output_blocks." + std::to_string(3 * i + 2) +
                   (up_block_has_attention ? ".2." : ".1.") + str(rest);
        }
    }
    return name;
}

std::string vae_diffusers_to_ldm(const std::string& name) {
    return vae_diffusers_to_ldm_impl(name, 4);
}

std::vector<TensorRecord> to_canonical_names(std::vector<TensorRecord> records, ModelRole role) {
    if (role == ModelRole::Checkpoint) role = recognise_role(records);
    const bool diffusers_unet =
        is_diffusers_unet(records, role == ModelRole::Checkpoint ? kUnetPrefix : "");
    const std::set<int> up_attention = unet_up_blocks_with_attention(records);
    const int vae_up_blocks = count_vae_up_blocks(records);
    std::vector<TensorRecord> out;
    out.reserve(records.size());
    for (TensorRecord& r : records) {
        std::string_view s = r.name;
        ModelRole part = role;
        if (role == ModelRole::Checkpoint) {
            if (split_component_name(r.name, part, s)) {
            } else if (comfy_llm_name(r.name, s)) {
                part = ModelRole::Llm;  // ComfyUI's all-in-one files: text_encoders.qwen3_4b...
            } else {
                out.push_back(std::move(r));  // not a component we know: kept for the report
                continue;
            }
        } else {
            s = strip_role_prefix(s, role);
        }
        std::string rest = str(s);
        switch (part) {
            case ModelRole::DiffusionModel: {
                if (diffusers_unet) {
                    int block = -1;
                    std::string_view u = rest;
                    if (consume(u, "up_blocks.")) consume_index(u, block);
                    rest = unet_diffusers_to_ldm(rest, up_attention.count(block) > 0);
                }
                r.name = str(kUnetPrefix) + rest;
                out.push_back(std::move(r));
                break;
            }
            case ModelRole::Vae:
                r.name = str(kVaePrefix) + vae_diffusers_to_ldm_impl(rest, vae_up_blocks);
                reshape_vae_attention(r);
                out.push_back(std::move(r));
                break;
            case ModelRole::TextEncoder:
                convert_text_encoder(std::move(r), rest, kTextPrefix, out);
                break;
            case ModelRole::TextEncoder2:
                convert_text_encoder(std::move(r), rest, kText2Prefix, out);
                break;
            case ModelRole::T5:
                r.name = str(kT5Prefix) + t5_from_llama_cpp(rest);
                out.push_back(std::move(r));
                break;
            case ModelRole::Llm:
                r.name = str(kLlmPrefix) + llm_from_llama_cpp(rest);
                out.push_back(std::move(r));
                break;
            case ModelRole::LlmVision: {
                // A tower saved apart keeps the VL model's names (transformers' visual.* or
                // model.visual.*); the role's prefix already says "visual.".
                std::string_view v = rest;
                if (consume(v, "model.visual.") || consume(v, "visual.")) rest = str(v);
                r.name = canonical_prefix(part) + rest;
                out.push_back(std::move(r));
                break;
            }
            default:
                // A role whose layouts are not converted yet: its names under its prefix.
                r.name = canonical_prefix(part) + rest;
                out.push_back(std::move(r));
                break;
        }
    }
    return out;
}

}  // namespace sd
