// A decoder-only LLM used as a text encoder (Qwen3 of Z-Image and FLUX.2-klein, Qwen2.5-VL's
// text model of Qwen-Image, Qwen2 / Llama / Mistral layouts), as transformers' Qwen3Model /
// Qwen2Model / LlamaModel and the reference program's LLM::TextModel: token embedding, pre-norm
// blocks of grouped-query causal self-attention with rotary positions (Qwen3: RMS norms over
// each head's q and k before the rotation; Qwen2: q/k/v biases) and a SwiGLU feed-forward
// down(silu(gate x) * up x), RMS norms, a final RMS norm `model.norm`.
//
// Configuration from the weights: width and vocabulary from model.embed_tokens, depth from
// the model.layers.N present, feed-forward width from gate_proj, q/k/v biases and q/k norms
// from their presence. Heads: head_dim is q_norm's size when the file has q/k norms; else
// LlmOptions::head_dim; else GGUF `<arch>.attention.key_length`; else width / GGUF
// `<arch>.attention.head_count`; else 128 (every LLM text encoder the reference runs without
// q/k norms: Qwen2.5-VL 3B/7B, Mistral, Ministral). Heads = q_proj rows / head_dim, KV heads
// = k_proj rows / head_dim; both must divide evenly and KV heads must divide heads.
//
// Names, under the Weights prefix (the role's "text_encoders.llm."): Hugging Face
// (model.embed_tokens.weight, model.layers.N.self_attn.{q,k,v,o}_proj, q_norm, k_norm,
// input_layernorm, post_attention_layernorm, mlp.{gate,up,down}_proj, model.norm), the same
// nested in model.language_model.* (newer transformers' VL models), or without the "model."
// level; llama.cpp's GGUF names (blk.N.attn_q ...) are converted to them by
// io/name_conversion, and ComfyUI's "text_encoders.<name>.transformer." prefix is stripped
// there for a --llm file. Weight matrices keep the file's dtype (f32/f16/bf16 and the GGUF
// block types) and are computed directly; the embedding table may be block-quantized (only
// the rows of the prompt's ids are dequantized).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "nn/layers.h"

namespace sd {

// How the two values of a rotated pair sit in a head: HalfSplit pairs i with i + head_dim/2
// (Hugging Face's rotate_half, ggml's NEOX: Qwen, and Llama / Mistral in HF layout);
// Interleaved pairs 2i with 2i + 1 (ggml's NORMAL: llama.cpp's GGUF of llama-architecture
// models, whose converter permutes q/k rows for it).
enum class RopeLayout { HalfSplit, Interleaved };

// What the weights' shapes do not say. 0 / unset: from GGUF metadata, else the default.
struct LlmOptions {
    int64_t head_dim = 0;     // see the head rule above
    float rope_theta = 0.0f;  // GGUF <arch>.rope.freq_base, else 1e6 (Qwen3, Qwen2.5-VL)
    float eps = 0.0f;         // GGUF <arch>.attention.layer_norm_rms_epsilon, else 1e-6
    RopeLayout rope_layout = RopeLayout::HalfSplit;
    // From GGUF metadata only (0: not given): checked against the shapes.
    int64_t heads = 0, kv_heads = 0;
};

// The options a llama.cpp GGUF file's metadata gives (general.architecture = "qwen3",
// "qwen2", "qwen2vl", "llama" ...: <arch>.rope.freq_base, .attention.head_count,
// .attention.head_count_kv, .attention.key_length, .attention.layer_norm_rms_epsilon;
// "llama" files get RopeLayout::Interleaved). Empty options for other files.
LlmOptions llm_options_from_metadata(const std::map<std::string, MetadataValue>& metadata);
// The same from the file given for the LLM role (ModelRole::Llm) in `files`, if any.
LlmOptions llm_options(const ModelFiles& files);

struct LlmConfig {
    int64_t vocab = 151936;
    int64_t width = 2560;  // hidden_size
    int64_t layers = 36;
    int64_t heads = 32;
    int64_t kv_heads = 8;
    int64_t head_dim = 128;
    int64_t ffn = 9728;  // intermediate_size
    bool qkv_bias = false;
    bool qk_norm = true;
    float rope_theta = 1e6f;
    RopeLayout rope_layout = RopeLayout::HalfSplit;
    float eps = 1e-6f;
};

struct LlmBlock {
    Tensor input_norm, post_attention_norm;  // RMS norm scales [width], f32
    Tensor q_norm, k_norm;                   // [head_dim] f32, or undefined (no q/k norms)
    Linear q, k, v, o;                       // q/k/v biases when the file has them
    Linear gate, up, down;
};

// Rows of input embeddings that replace the token embeddings from `at` on (a vision tower's
// image embeddings in place of a prompt's <|image_pad|> tokens, as the reference's
// image_embeds): rows f32 [1, k, width] or [k, width].
struct LlmEmbedSplice {
    int64_t at = 0;
    Tensor rows;
};

// Per-call inputs besides the ids.
struct LlmInput {
    // Empty, or one value per id: 0 marks a padding key that no query attends to (the
    // reference's attention mask for prompts padded to a length, e.g. FLUX.2's 512); the
    // causal mask applies as well. Padding goes at the end: a query whose visible keys are
    // all padding gets a zero attention output.
    std::span<const float> key_mask;
    // Empty (positions 0..n-1), or one position per id. Qwen2.5-VL's 3-axis positions (text
    // and image tokens) are not taken yet: for text alone its three axes are equal and this
    // 1-D rotation is exactly its M-RoPE.
    std::span<const int32_t> positions;
    // Embedding rows spliced over the ids' (each within the ids, none overlapping).
    std::span<const LlmEmbedSplice> splices;
};

class Llm {
  public:
    // Builds from `w` = the role's prefix ("text_encoders.llm."); throws one sd::Error
    // listing every missing or mis-shaped tensor, or saying why the file is no LLM.
    static Llm load(const Weights& w, const LlmOptions& options = {});

    // ids -> f32 [1, n, width * k]. out_layers numbers hidden states as the reference does:
    // layer L (1 <= L <= layers) is the output of block L - 1 before any norm (so {35} on
    // Qwen3-4B's 36 blocks, Z-Image's choice, is the second to last block's output, not
    // normed), layer layers + 1 is the final-normed output. The hidden states of the listed
    // layers that the model has are concatenated on the feature axis in increasing layer
    // order (duplicates count once; layers it does not have are skipped, as the reference's
    // std::set lookup does). When out_layers is empty, or none of them exists (e.g. {35} or
    // {9, 18, 27} on a 2-block file), the result is the final-normed output [1, n, width].
    // Blocks past the last layer asked for are not run (their output is not returned).
    Tensor forward(std::span<const int32_t> ids, std::span<const int> out_layers = {},
                   const LlmInput& input = {}) const;

    int64_t width() const { return config_.width; }
    const LlmConfig& config() const { return config_; }
    // The dtype of the blocks' weight matrices (block 0's q_proj): f32, bf16, q8_0 ...
    DType weight_dtype() const { return blocks_.front().q.weight.dtype(); }
    // Drops the weights' file pages from RSS (see Residency); the next forward faults them
    // back in. Call once the prompt is encoded.
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    Tensor embed(std::span<const int32_t> ids) const;
    // x: the embedded ids, f32 [1, n, width], contiguous.
    void splice_embeddings(Tensor& x, std::span<const LlmEmbedSplice> splices) const;
    Tensor attention(const LlmBlock& b, const Tensor& x, const Tensor& rope,
                     const Tensor& mask) const;
    Tensor block(const LlmBlock& b, const Tensor& x, const Tensor& rope, const Tensor& mask) const;

    LlmConfig config_;
    Tensor embed_tokens_;  // [vocab, width], the file's dtype
    std::vector<LlmBlock> blocks_;
    Tensor norm_;  // [width], f32
    WeightPages pages_;
};

// Causal grouped-query attention: q f32 [1, n, heads, d], k and v [1, n, kv_heads, d] with
// kv_heads dividing heads (query head h reads key-value head h / (heads / kv_heads), as
// transformers' repeat_kv); mask: undefined or broadcastable to [kv_heads, heads / kv_heads, n,
// n]. Returns [1, n, heads * d]. The shared keys and values are broadcast views (stride 0), not
// copies.
Tensor grouped_query_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& mask);

// The rotation of one head row of `head_dim` values in place: pairs as `layout` places them,
// pair p turned by the angle position * theta^(-2p / head_dim) (cos_sin: head_dim / 2 (cos,
// sin) pairs of the row's position, from llm_rope_table).
void llm_rope_row(float* x, const float* cos_sin, int64_t head_dim, RopeLayout layout);
// f32 [n, head_dim / 2, 2]: (cos, sin) of each position and pair, angles in double.
Tensor llm_rope_table(std::span<const int32_t> positions, int64_t n, int64_t head_dim, float theta);

}  // namespace sd
