#include "adapters/lora_names.h"

#include <algorithm>
#include <string_view>

#include "io/component_roles.h"
#include "io/name_conversion.h"

namespace sd {
namespace {

// The parts LoRAs patch, under their canonical prefixes (io/component_roles.h).
const std::string_view kUnet = canonical_prefix(ModelRole::DiffusionModel);
const std::string_view kText = canonical_prefix(ModelRole::TextEncoder);
const std::string_view kText2 = canonical_prefix(ModelRole::TextEncoder2);

// How a LoRA key names one of those parts: its canonical prefix, its diffusers folder
// ("unet.", "text_encoder_2."; the role table's), and the short forms LoRA tools write. The
// second text encoder before the first: "cond_stage_model." would take its names.
struct LoraTarget {
    ModelRole role;
    std::vector<std::string> prefixes;
};

const std::vector<LoraTarget>& lora_targets() {
    static const std::vector<LoraTarget> targets = [] {
        const std::pair<ModelRole, std::vector<std::string>> parts[] = {
            {ModelRole::DiffusionModel, {"diffusion_model."}},
            {ModelRole::TextEncoder2, {"te2."}},
            {ModelRole::TextEncoder, {"te1.", "cond_stage_model."}}};
        std::vector<LoraTarget> out;
        for (const auto& [role, short_forms] : parts) {
            const ComponentRole& r = component_role(role);
            LoraTarget t{role, {r.prefix}};
            for (const char* folder : r.diffusers_folders)
                t.prefixes.push_back(std::string(folder) + ".");
            t.prefixes.insert(t.prefixes.end(), short_forms.begin(), short_forms.end());
            out.push_back(std::move(t));
        }
        return out;
    }();
    return targets;
}

// Module names with an underscore of their own (diffusers, LDM, CLIP, Wan), longest first so
// that "transformer_blocks" wins over a shorter name inside it.
const std::vector<std::string>& compound_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n = {
            "down_blocks", "up_blocks", "mid_block", "transformer_blocks", "proj_in", "proj_out",
            "to_q", "to_k", "to_v", "to_out", "time_emb_proj", "conv_shortcut", "conv_in",
            "conv_out", "conv_norm_out", "time_embedding", "linear_1", "linear_2", "add_embedding",
            "input_blocks", "middle_block", "output_blocks", "in_layers", "out_layers",
            "emb_layers", "skip_connection", "time_embed", "label_emb", "text_model", "self_attn",
            "q_proj", "k_proj", "v_proj", "out_proj", "final_layer_norm", "layer_norm1",
            "layer_norm2", "text_projection", "token_embedding", "position_embedding", "to_q_lora",
            "to_k_lora", "to_v_lora", "to_out_lora", "add_k_proj", "add_v_proj", "nin_shortcut",
            "norm_out", "quant_conv", "post_quant_conv",
            // the Wan DiT's (musubi-tuner's kohya keys)
            "cross_attn", "text_embedding", "time_projection", "patch_embedding", "img_emb",
            "k_img", "v_img",
            // FLUX.1 / FLUX.2 / Chroma's (kohya's lora_unet_double_blocks_0_img_attn_qkv)
            "double_blocks", "single_blocks", "img_attn", "txt_attn", "img_mlp", "txt_mlp",
            "img_mod", "txt_mod", "img_in", "txt_in", "time_in", "vector_in", "guidance_in",
            "in_layer", "out_layer", "final_layer", "adaLN_modulation",
            "double_stream_modulation_img", "double_stream_modulation_txt",
            "single_stream_modulation",
            // diffusers' Flux2Transformer2DModel's (kohya keys of diffusers-layout LoRAs)
            "single_transformer_blocks", "to_qkv_mlp_proj", "to_add_out", "ff_context", "linear_in",
            "linear_out", "x_embedder", "context_embedder", "time_guidance_embed",
            "timestep_embedder", "guidance_embedder", "add_q_proj", "proj_mlp", "time_text_embed",
            "text_embedder", "norm1_context",
            // SD3's MMDiT (kohya's lora_unet_joint_blocks_0_x_block_attn_qkv) and its diffusers
            "joint_blocks", "x_block", "context_block", "t_embedder", "y_embedder", "pos_embed"};
        std::sort(n.begin(), n.end(),
                  [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
        return n;
    }();
    return names;
}

bool consume(std::string& s, std::string_view prefix) {
    if (s.compare(0, prefix.size(), prefix) != 0) return false;
    s.erase(0, prefix.size());
    return true;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
}

bool is_diffusers_unet(const std::string& s) {
    for (const char* p : {"down_blocks.", "up_blocks.", "mid_block.", "conv_in", "conv_out",
                          "time_embedding.", "add_embedding.", "conv_norm_out"}) {
        if (s.compare(0, std::string_view(p).size(), p) == 0) return true;
    }
    return false;
}

// The original Wan DiT name of a module path in diffusers' WanTransformer3DModel names
// (blocks.N.attn1.to_q -> blocks.N.self_attn.q, condition_embedder.*, proj_out); empty when it
// is none of them.
std::string wan_from_diffusers(const std::string& path) {
    static const std::pair<const char*, const char*> kTop[] = {
        {"condition_embedder.time_embedder.linear_1", "time_embedding.0"},
        {"condition_embedder.time_embedder.linear_2", "time_embedding.2"},
        {"condition_embedder.time_proj", "time_projection.1"},
        {"condition_embedder.text_embedder.linear_1", "text_embedding.0"},
        {"condition_embedder.text_embedder.linear_2", "text_embedding.2"},
        {"condition_embedder.image_embedder.ff.net.0.proj", "img_emb.proj.1"},
        {"condition_embedder.image_embedder.ff.net.2", "img_emb.proj.3"},
        {"proj_out", "head.head"}};
    static const std::pair<const char*, const char*> kInBlock[] = {
        {"attn1.to_q", "self_attn.q"},
        {"attn1.to_k", "self_attn.k"},
        {"attn1.to_v", "self_attn.v"},
        {"attn1.to_out.0", "self_attn.o"},
        {"attn2.to_q", "cross_attn.q"},
        {"attn2.to_k", "cross_attn.k"},
        {"attn2.to_v", "cross_attn.v"},
        {"attn2.to_out.0", "cross_attn.o"},
        {"attn2.add_k_proj", "cross_attn.k_img"},
        {"attn2.add_v_proj", "cross_attn.v_img"},
        {"ffn.net.0.proj", "ffn.0"},
        {"ffn.net.2", "ffn.2"}};
    for (const auto& [from, to] : kTop)
        if (path == from) return to;
    const size_t dot = path.find('.', 7);  // after "blocks.N"
    if (path.compare(0, 7, "blocks.") != 0 || dot == std::string::npos) return "";
    for (const auto& [from, to] : kInBlock)
        if (path.compare(dot + 1, std::string::npos, from) == 0)
            return path.substr(0, dot + 1) + to;
    return "";
}

// One row of a diffusers-to-original table: a module path (inside a block, after its index,
// for the block tables) and the original name, with the part of a fused weight it is.
struct NameRow {
    const char* from;
    const char* to;
    int block = -1;
    bool to_end = false;
    bool swap_halves = false;
};

// `path`'s row in a table of top-level names; empty name: none.
template <size_t N>
LoraPart from_top(const std::string& path, const NameRow (&table)[N]) {
    for (const NameRow& row : table)
        if (path == row.from) return {row.to, row.block, row.to_end, row.swap_halves};
    return {};
}

// `path` inside the numbered blocks `diffusers_block` ("transformer_blocks.N.") through a table
// of names inside a block, under `block` ("double_blocks.N."); empty name: none.
template <size_t N>
LoraPart from_block(const std::string& path, std::string_view diffusers_block,
                    std::string_view block, const NameRow (&table)[N]) {
    if (path.compare(0, diffusers_block.size(), diffusers_block) != 0) return {};
    const size_t dot = path.find('.', diffusers_block.size());
    if (dot == std::string::npos) return {};
    const std::string index = path.substr(diffusers_block.size(), dot + 1 - diffusers_block.size());
    for (const NameRow& row : table)
        if (path.compare(dot + 1, std::string::npos, row.from) == 0)
            return {std::string(block) + index + row.to, row.block, row.to_end, row.swap_halves};
    return {};
}

// BFL's name for a module path in diffusers' FluxTransformer2DModel / Flux2Transformer2DModel
// names (ai-toolkit's and diffusers' FLUX LoRAs). A diffusers projection that is a part of a
// BFL fused weight (to_q / to_k / to_v of qkv, proj_mlp of linear1) gives its block there;
// norm_out ([scale; shift]) is BFL's final adaLN ([shift; scale]) with its halves swapped.
LoraPart flux_from_diffusers(const std::string& path) {
    static const NameRow kTop[] = {
        {"x_embedder", "img_in"},
        {"context_embedder", "txt_in"},
        {"proj_out", "final_layer.linear"},
        {"norm_out.linear", "final_layer.adaLN_modulation.1", -1, false, true},
        {"time_text_embed.timestep_embedder.linear_1", "time_in.in_layer"},
        {"time_text_embed.timestep_embedder.linear_2", "time_in.out_layer"},
        {"time_text_embed.guidance_embedder.linear_1", "guidance_in.in_layer"},
        {"time_text_embed.guidance_embedder.linear_2", "guidance_in.out_layer"},
        {"time_text_embed.text_embedder.linear_1", "vector_in.in_layer"},
        {"time_text_embed.text_embedder.linear_2", "vector_in.out_layer"},
        {"time_guidance_embed.timestep_embedder.linear_1", "time_in.in_layer"},
        {"time_guidance_embed.timestep_embedder.linear_2", "time_in.out_layer"},
        {"time_guidance_embed.guidance_embedder.linear_1", "guidance_in.in_layer"},
        {"time_guidance_embed.guidance_embedder.linear_2", "guidance_in.out_layer"},
        {"double_stream_modulation_img.linear", "double_stream_modulation_img.lin"},
        {"double_stream_modulation_txt.linear", "double_stream_modulation_txt.lin"},
        {"single_stream_modulation.linear", "single_stream_modulation.lin"}};
    static const NameRow kDouble[] = {
        {"attn.to_q", "img_attn.qkv", 0},       {"attn.to_k", "img_attn.qkv", 1},
        {"attn.to_v", "img_attn.qkv", 2},       {"attn.add_q_proj", "txt_attn.qkv", 0},
        {"attn.add_k_proj", "txt_attn.qkv", 1}, {"attn.add_v_proj", "txt_attn.qkv", 2},
        {"attn.to_out.0", "img_attn.proj"},     {"attn.to_add_out", "txt_attn.proj"},
        {"ff.net.0.proj", "img_mlp.0"},         {"ff.net.2", "img_mlp.2"},
        {"ff_context.net.0.proj", "txt_mlp.0"}, {"ff_context.net.2", "txt_mlp.2"},
        {"ff.linear_in", "img_mlp.0"},          {"ff.linear_out", "img_mlp.2"},
        {"ff_context.linear_in", "txt_mlp.0"},  {"ff_context.linear_out", "txt_mlp.2"},
        {"norm1.linear", "img_mod.lin"},        {"norm1_context.linear", "txt_mod.lin"}};
    static const NameRow kSingle[] = {{"attn.to_q", "linear1", 0},
                                      {"attn.to_k", "linear1", 1},
                                      {"attn.to_v", "linear1", 2},
                                      {"proj_mlp", "linear1", 3, true},
                                      {"proj_out", "linear2"},
                                      {"norm.linear", "modulation.lin"},
                                      {"attn.to_qkv_mlp_proj", "linear1"},
                                      {"attn.to_out", "linear2"},
                                      {"attn.to_out.0", "linear2"}};
    LoraPart part = from_top(path, kTop);
    if (part.name.empty())
        part = from_block(path, "transformer_blocks.", "double_blocks.", kDouble);
    if (part.name.empty())
        part = from_block(path, "single_transformer_blocks.", "single_blocks.", kSingle);
    return part;
}

// The original MMDiT name (Stability's SD3 / SD3.5 checkpoints) of a module path in diffusers'
// SD3Transformer2DModel names: to_q / to_k / to_v thirds of the fused qkv (attn2: SD3.5's
// second image attention); norm_out, and norm1_context of the last block (whose context
// stream ends there: shift and scale only), are AdaLayerNormContinuous, halves swapped.
LoraPart sd3_from_diffusers(const std::string& path) {
    static const NameRow kTop[] = {
        {"pos_embed.proj", "x_embedder.proj"},
        {"time_text_embed.timestep_embedder.linear_1", "t_embedder.mlp.0"},
        {"time_text_embed.timestep_embedder.linear_2", "t_embedder.mlp.2"},
        {"time_text_embed.text_embedder.linear_1", "y_embedder.mlp.0"},
        {"time_text_embed.text_embedder.linear_2", "y_embedder.mlp.2"},
        {"proj_out", "final_layer.linear"},
        {"norm_out.linear", "final_layer.adaLN_modulation.1", -1, false, true}};
    static const NameRow kJoint[] = {
        {"attn.to_q", "x_block.attn.qkv", 0},
        {"attn.to_k", "x_block.attn.qkv", 1},
        {"attn.to_v", "x_block.attn.qkv", 2},
        {"attn.add_q_proj", "context_block.attn.qkv", 0},
        {"attn.add_k_proj", "context_block.attn.qkv", 1},
        {"attn.add_v_proj", "context_block.attn.qkv", 2},
        {"attn.to_out.0", "x_block.attn.proj"},
        {"attn.to_add_out", "context_block.attn.proj"},
        {"attn2.to_q", "x_block.attn2.qkv", 0},
        {"attn2.to_k", "x_block.attn2.qkv", 1},
        {"attn2.to_v", "x_block.attn2.qkv", 2},
        {"attn2.to_out.0", "x_block.attn2.proj"},
        {"ff.net.0.proj", "x_block.mlp.fc1"},
        {"ff.net.2", "x_block.mlp.fc2"},
        {"ff_context.net.0.proj", "context_block.mlp.fc1"},
        {"ff_context.net.2", "context_block.mlp.fc2"},
        {"norm1.linear", "x_block.adaLN_modulation.1"},
        {"norm1_context.linear", "context_block.adaLN_modulation.1", -1, false, true}};
    LoraPart part = from_top(path, kTop);
    if (part.name.empty()) part = from_block(path, "transformer_blocks.", "joint_blocks.", kJoint);
    return part;
}

// The UNet's LDM names for a path inside it (diffusers or LDM); an upsampler's index depends
// on whether its level has attention, so both readings are offered. A DiT path as it is, and
// in Wan's or BFL's FLUX names when it is in their diffusers names.
void add_unet(std::string path, std::vector<LoraPart>& out) {
    if (path.size() > 7 && path.compare(path.size() - 7, 7, ".to_out") == 0) path += ".0";
    if (is_diffusers_unet(path)) {
        for (bool attention : {true, false}) {
            std::string ldm =
                std::string(kUnet) + unet_diffusers_to_ldm(path + ".weight", attention);
            if (std::none_of(out.begin(), out.end(),
                             [&](const LoraPart& p) { return p.name == ldm; }))
                out.push_back({ldm});
        }
        return;
    }
    out.push_back({std::string(kUnet) + path + ".weight"});
    const std::string wan = wan_from_diffusers(path);
    if (!wan.empty()) out.push_back({std::string(kUnet) + wan + ".weight"});
    for (LoraPart part : {flux_from_diffusers(path), sd3_from_diffusers(path)}) {
        if (part.name.empty()) continue;
        part.name = std::string(kUnet) + part.name + ".weight";
        out.push_back(std::move(part));
    }
}

void add_text(std::string path, std::string_view prefix, std::vector<LoraPart>& out) {
    consume(path, "transformer.");
    if (path.compare(0, 11, "text_model.") != 0 && path != "text_projection")
        path = "text_model." + path;
    out.push_back({std::string(prefix) + path + ".weight"});
}

}  // namespace

std::string kohya_to_dotted(const std::string& underscored) {
    // Protect the underscores of known names, make the rest dots, restore the protected ones.
    std::string s = "_" + underscored + "_";
    for (const std::string& name : compound_names()) {
        std::string guarded = name;
        std::replace(guarded.begin(), guarded.end(), '_', '\x01');
        replace_all(s, "_" + name + "_", "_" + guarded + "_");
    }
    std::replace(s.begin(), s.end(), '_', '.');
    std::replace(s.begin(), s.end(), '\x01', '_');
    return s.substr(1, s.size() - 2);
}

std::vector<LoraPart> lora_target_candidates(const std::string& key) {
    std::vector<LoraPart> out;
    std::string s = key;
    consume(s, "lora.");
    consume(s, "base_model.model.");
    // Attention processors of older diffusers LoRAs: attn1.processor.to_q(_lora).
    replace_all(s, ".processor.", ".");
    if (consume(s, "lora_unet_")) {
        std::string path = kohya_to_dotted(s);
        replace_all(path, "_lora", "");
        add_unet(path, out);
    } else if (consume(s, "lora_te2_")) {
        add_text(kohya_to_dotted(s), kText2, out);
    } else if (consume(s, "lora_te1_") || consume(s, "lora_te_")) {
        add_text(kohya_to_dotted(s), kText, out);
    } else {
        for (const LoraTarget& t : lora_targets()) {
            if (!std::any_of(t.prefixes.begin(), t.prefixes.end(),
                             [&](const std::string& p) { return consume(s, p); }))
                continue;
            if (t.role != ModelRole::DiffusionModel) {
                add_text(s, canonical_prefix(t.role), out);
                return out;
            }
            if (s.size() > 5 && s.compare(s.size() - 5, 5, "_lora") == 0) s.erase(s.size() - 5);
            add_unet(s, out);
            return out;
        }
        add_unet(s, out);  // a bare UNet path
    }
    return out;
}

}  // namespace sd
