// The T5 v1.1 encoder (T5-XXL of FLUX.1 and SD3), as transformers' T5EncoderModel: token
// embedding (`shared`), pre-norm blocks of self-attention with a learned relative position
// bias (block 0's, shared by every block; no 1/sqrt(d) scaling, T5 folds it into the
// weights) and a gated-GELU feed-forward (tanh GELU), RMS norms, a final RMS norm. Depth,
// width, heads and feed-forward width are read from the weights. UMT5 (Wan's text encoder,
// transformers' UMT5EncoderModel) is the same but for a relative position bias of its own in
// every block: told by block 1 having one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nn/layers.h"

namespace sd {

struct T5Config {
    int64_t vocab = 32128;
    int64_t width = 4096;  // d_model
    int64_t layers = 24;
    int64_t heads = 64;
    int64_t head_dim = 64;  // inner width = heads * head_dim
    int64_t ffn = 10240;    // d_ff
    int64_t buckets = 32;   // relative_attention_num_buckets
    int64_t max_distance = 128;
    float eps = 1e-6f;
};

struct T5Block {
    Tensor attn_norm, ffn_norm;      // RMS norm scales [width], f32
    Tensor relative_attention_bias;  // UMT5: this block's [buckets, heads], f32; T5: undefined
    Linear q, k, v, o;               // no biases
    Linear wi_0, wi_1, wo;           // gated GELU: wo(gelu_tanh(wi_0 x) * wi_1 x)
};

// T5's bucket of a key at `relative_position` = key index - query index (bidirectional:
// half the buckets for keys after the query; exact up to buckets / 4, then logarithmic up to
// max_distance), as transformers' T5Attention._relative_position_bucket.
int32_t t5_relative_position_bucket(int64_t relative_position, int64_t buckets = 32,
                                    int64_t max_distance = 128);

class T5Encoder {
  public:
    // Builds from `w` = "text_encoders.t5xxl.transformer." (Hugging Face names below it:
    // shared.weight, encoder.block.N.layer.{0,1}.*, encoder.final_layer_norm.weight); throws
    // listing every missing or mis-shaped tensor.
    static T5Encoder load(const Weights& w);

    // ids: token ids (as T5Tokenizer gives, padded or not) -> f32 [1, n, width], after the
    // final norm. Attention spans all n ids, padding included, as for FLUX; `key_mask` (empty,
    // or n values added to the scores of each key: 0, or -inf to skip it) masks some out, as
    // Chroma's chroma_use_t5_mask.
    Tensor forward(std::span<const int32_t> ids, std::span<const float> key_mask = {}) const;

    int64_t width() const { return config_.width; }
    // UMT5: a relative position bias in every block.
    bool per_block_position_bias() const {
        return !blocks_.empty() && blocks_[0].relative_attention_bias.defined();
    }
    const T5Config& config() const { return config_; }
    // Drops the weights' file pages from RSS (see Residency); the next forward faults them
    // back in. Call once the prompt is encoded.
    void release_weights() const { pages_.release(); }
    const WeightPages& weight_pages() const { return pages_; }

  private:
    // f32 [1, heads, n, n] from `table` [buckets, heads], plus key_mask[j] on key j's column
    // when given.
    Tensor position_bias(const Tensor& table, int64_t n, std::span<const float> key_mask) const;
    Tensor block(const T5Block& b, const Tensor& x, const Tensor& bias) const;

    T5Config config_;
    Tensor shared_;                   // [vocab, width]
    Tensor relative_attention_bias_;  // [buckets, heads], f32
    std::vector<T5Block> blocks_;
    Tensor final_norm_;  // [width], f32
    WeightPages pages_;
};

}  // namespace sd
