#include "models/llm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <variant>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "ops/norm.h"

namespace sd {
namespace {

// Where the text model's names start below the role's prefix: Hugging Face's "model.",
// newer transformers' VL models' "model.language_model.", or a bare text model.
const char* const kRoots[] = {"model.", "model.language_model.", ""};

std::optional<double> number(const std::map<std::string, MetadataValue>& md,
                             const std::string& key) {
    auto it = md.find(key);
    if (it == md.end()) return std::nullopt;
    const auto& v = it->second.value;
    if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    if (const auto* u = std::get_if<uint64_t>(&v)) return static_cast<double>(*u);
    if (const auto* d = std::get_if<double>(&v)) return *d;
    return std::nullopt;  // a per-layer array or a string: not used
}

// The scope of the text model under `w` (the first root holding its embedding or its first
// block), or none.
std::optional<Weights> find_root(const Weights& w) {
    for (const char* root : kRoots) {
        Weights m = w;
        std::string rest = root;
        while (!rest.empty()) {
            const size_t dot = rest.find('.');
            m = m[rest.substr(0, dot)];
            rest.erase(0, dot + 1);
        }
        if (m.has("embed_tokens.weight") || m.has("layers.0.self_attn.q_proj.weight")) return m;
    }
    return std::nullopt;
}

bool has_layer(const Weights& m, int64_t i) {
    const std::string l = "layers." + std::to_string(i) + ".";
    return m.has(l + "self_attn.q_proj.weight") || m.has(l + "mlp.gate_proj.weight") ||
           m.has(l + "input_layernorm.weight");
}

Shape matrix_shape(const Weights& m, const std::string& name) {
    auto s = m.shape_of(name);
    SD_CHECK(s && s->size() == 2, "LLM: '%s%s' %s is not a matrix", m.prefix().c_str(),
             name.c_str(), s ? s->to_string().c_str() : "(missing)");
    return *s;
}

// head_dim by the rule of llm.h.
int64_t pick_head_dim(const Weights& m, const LlmOptions& o, int64_t width, bool qk_norm) {
    if (qk_norm) {
        auto s = m.shape_of("layers.0.self_attn.q_norm.weight");
        SD_CHECK(s && s->size() == 1 && (*s)[0] > 0,
                 "LLM: '%slayers.0.self_attn.q_norm.weight' %s "
                 "is not a [head_dim] vector",
                 m.prefix().c_str(), s ? s->to_string().c_str() : "(missing)");
        return (*s)[0];
    }
    if (o.head_dim > 0) return o.head_dim;
    if (o.heads > 0) {
        SD_CHECK(width % o.heads == 0, "LLM: %lld heads (GGUF metadata) do not divide width %lld",
                 (long long)o.heads, (long long)width);
        return width / o.heads;
    }
    return 128;
}

LlmConfig read_config(const Weights& m, const LlmOptions& o) {
    LlmConfig c;
    const Shape embed = matrix_shape(m, "embed_tokens.weight");
    c.vocab = embed[0];
    c.width = embed[1];
    c.layers = 0;
    while (has_layer(m, c.layers)) ++c.layers;
    const Shape q = matrix_shape(m, "layers.0.self_attn.q_proj.weight");
    const Shape k = matrix_shape(m, "layers.0.self_attn.k_proj.weight");
    const Shape gate = matrix_shape(m, "layers.0.mlp.gate_proj.weight");
    c.ffn = gate[0];
    c.qk_norm = m.has("layers.0.self_attn.q_norm.weight");
    c.qkv_bias = m.has("layers.0.self_attn.q_proj.bias");
    c.head_dim = pick_head_dim(m, o, c.width, c.qk_norm);
    const char* where = m.prefix().c_str();
    SD_CHECK(q[0] % c.head_dim == 0 && k[0] % c.head_dim == 0 && k[0] > 0,
             "LLM under '%s': q_proj %s and k_proj %s are not whole heads of %lld", where,
             q.to_string().c_str(), k.to_string().c_str(), (long long)c.head_dim);
    c.heads = q[0] / c.head_dim;
    c.kv_heads = k[0] / c.head_dim;
    SD_CHECK(c.heads % c.kv_heads == 0,
             "LLM under '%s': %lld query heads are not a multiple of %lld key/value heads "
             "(q_proj %s, k_proj %s, head_dim %lld)",
             where, (long long)c.heads, (long long)c.kv_heads, q.to_string().c_str(),
             k.to_string().c_str(), (long long)c.head_dim);
    SD_CHECK((o.heads == 0 || o.heads == c.heads) && (o.kv_heads == 0 || o.kv_heads == c.kv_heads),
             "LLM under '%s': the file's metadata says %lld heads / %lld key/value heads, its "
             "weights hold %lld / %lld of %lld",
             where, (long long)o.heads, (long long)o.kv_heads, (long long)c.heads,
             (long long)c.kv_heads, (long long)c.head_dim);
    SD_CHECK(c.head_dim % 2 == 0, "LLM under '%s': head_dim %lld is odd (no rotary pairs)", where,
             (long long)c.head_dim);
    c.rope_theta = o.rope_theta > 0 ? o.rope_theta : 1e6f;
    c.eps = o.eps > 0 ? o.eps : 1e-6f;
    c.rope_layout = o.rope_layout;
    return c;
}

LlmBlock load_block(const Weights& b, const LlmConfig& c) {
    const int64_t q_out = c.heads * c.head_dim, kv_out = c.kv_heads * c.head_dim;
    Weights attn = b["self_attn"], mlp = b["mlp"];
    LlmBlock l;
    l.input_norm = b["input_layernorm"].get("weight", {c.width});
    l.post_attention_norm = b["post_attention_layernorm"].get("weight", {c.width});
    if (c.qk_norm) {
        l.q_norm = attn["q_norm"].get("weight", {c.head_dim});
        l.k_norm = attn["k_norm"].get("weight", {c.head_dim});
    }
    l.q = Linear::load(attn["q_proj"], c.width, q_out, c.qkv_bias);
    l.k = Linear::load(attn["k_proj"], c.width, kv_out, c.qkv_bias);
    l.v = Linear::load(attn["v_proj"], c.width, kv_out, c.qkv_bias);
    l.o = Linear::load(attn["o_proj"], q_out, c.width, false);
    l.gate = Linear::load(mlp["gate_proj"], c.width, c.ffn, false);
    l.up = Linear::load(mlp["up_proj"], c.width, c.ffn, false);
    l.down = Linear::load(mlp["down_proj"], c.ffn, c.width, false);
    return l;
}

// Rotates every head row of x (contiguous f32 [1, n, heads, head_dim]) in place.
void rotate(const Tensor& x, const Tensor& table, RopeLayout layout) {
    const int64_t n = x.size(1), heads = x.size(2), d = x.size(3);
    float* p = x.data<float>();
    const float* t = table.data<float>();
    parallel_for(n, 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            for (int64_t h = 0; h < heads; ++h)
                llm_rope_row(p + (i * heads + h) * d, t + i * d, d, layout);
    });
}

// The rows `ids` of a table held contiguously in a file, read from the file (the page cache)
// into [ids, width] of its dtype: the mapping is not touched, so the table (Qwen3-4B's: 778 MB
// in bf16) never enters RSS for a prompt's few rows (touching a row through the mapping can map
// far more around it). Undefined when the table is not a file's contiguous bytes.
Tensor rows_from_file(const Tensor& table, std::span<const int32_t> ids) {
    const std::shared_ptr<Storage>& s = table.storage();
    if (!s || !s->file() || !table.is_contiguous()) return {};
    const int64_t vocab = table.size(0), width = table.size(1);
    const size_t row = row_bytes(table.dtype(), width);
    const auto at =
        static_cast<size_t>(static_cast<const uint8_t*>(table.data_ptr()) - s->file()->data());
    Tensor rows = Tensor::empty({static_cast<int64_t>(ids.size()), width}, table.dtype());
    auto* out = static_cast<uint8_t*>(rows.data_ptr());
    for (size_t i = 0; i < ids.size(); ++i) {
        SD_CHECK(ids[i] >= 0 && ids[i] < vocab, "LLM: token id %d outside the vocabulary of %lld",
                 ids[i], static_cast<long long>(vocab));
        s->file()->read(at + static_cast<size_t>(ids[i]) * row, out + i * row, row);
    }
    return rows;
}

// The layers of `out_layers` the model has (1..layers + 1), sorted, each once.
std::vector<int> wanted_layers(std::span<const int> out_layers, int64_t layers) {
    std::vector<int> out;
    for (int l : out_layers)
        if (l >= 1 && l <= layers + 1) out.push_back(l);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace

LlmOptions llm_options_from_metadata(const std::map<std::string, MetadataValue>& md) {
    LlmOptions o;
    auto it = md.find("general.architecture");
    if (it == md.end()) return o;
    const auto* arch = std::get_if<std::string>(&it->second.value);
    if (!arch) return o;
    const std::string a = *arch + ".";
    if (auto v = number(md, a + "rope.freq_base")) o.rope_theta = static_cast<float>(*v);
    if (auto v = number(md, a + "attention.layer_norm_rms_epsilon")) o.eps = static_cast<float>(*v);
    if (auto v = number(md, a + "attention.key_length")) o.head_dim = static_cast<int64_t>(*v);
    if (auto v = number(md, a + "attention.head_count")) o.heads = static_cast<int64_t>(*v);
    if (auto v = number(md, a + "attention.head_count_kv")) o.kv_heads = static_cast<int64_t>(*v);
    // llama.cpp's converter permutes a llama model's q/k rows for ggml's NORMAL rotation.
    if (*arch == "llama") o.rope_layout = RopeLayout::Interleaved;
    return o;
}

LlmOptions llm_options(const ModelFiles& files) {
    LlmOptions o;
    for (const RoleFile& rf : files.role_files()) {
        if (rf.role != ModelRole::Llm) continue;
        for (const TensorFile& f : files.files())
            if (f.path == rf.path) o = llm_options_from_metadata(f.metadata);
    }
    return o;
}

Tensor grouped_query_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& mask) {
    const int64_t n = q.size(1), h = q.size(2), kv = k.size(2), d = q.size(3);
    SD_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && kv > 0 && h % kv == 0 &&
                 k.size(1) == n && v.size(1) == n && v.size(2) == kv && k.size(3) == d &&
                 v.size(3) == d,
             "grouped_query_attention: q %s, k %s, v %s are not [1, n, heads, d] with key-value "
             "heads dividing heads",
             q.describe().c_str(), k.describe().c_str(), v.describe().c_str());
    const int64_t g = h / kv;
    // Batch = key-value head, heads = the g query heads that share it; its keys and values
    // broadcast over them (stride 0).
    const Tensor qa = q.contiguous().view({n, kv, g, d}).permute({1, 2, 0, 3});
    auto shared = [&](const Tensor& t) {
        return t.contiguous().view({n, kv, 1, d}).permute({1, 2, 0, 3}).expand({kv, g, n, d});
    };
    AttentionOptions options;
    options.causal = true;
    const Tensor out = scaled_dot_product_attention(qa, shared(k), shared(v), mask, options);
    return permute_copy(out.view({h, n, d}), {1, 0, 2}).view({1, n, h * d});
}

void llm_rope_row(float* x, const float* cs, int64_t d, RopeLayout layout) {
    const int64_t half = d / 2;
    // HalfSplit: pair p is (x[p], x[p + d/2]); Interleaved: (x[2p], x[2p + 1]).
    const int64_t second = layout == RopeLayout::HalfSplit ? half : 1;
    const int64_t step = layout == RopeLayout::HalfSplit ? 1 : 2;
    for (int64_t p = 0; p < half; ++p) {
        float& a = x[p * step];
        float& b = x[p * step + second];
        const float c = cs[2 * p], s = cs[2 * p + 1];
        const float x0 = a, x1 = b;
        a = x0 * c - x1 * s;
        b = x1 * c + x0 * s;
    }
}

Tensor llm_rope_table(std::span<const int32_t> positions, int64_t n, int64_t d, float theta) {
    SD_CHECK(positions.empty() || static_cast<int64_t>(positions.size()) == n,
             "LLM: %zu positions for %lld tokens", positions.size(), static_cast<long long>(n));
    const int64_t half = d / 2;
    Tensor t = Tensor::empty({n, half, 2});
    float* out = t.data<float>();
    std::vector<double> inv_freq(static_cast<size_t>(half));
    for (int64_t p = 0; p < half; ++p)
        inv_freq[p] = std::pow(static_cast<double>(theta), -2.0 * p / static_cast<double>(d));
    for (int64_t i = 0; i < n; ++i) {
        const double pos = positions.empty() ? static_cast<double>(i) : positions[i];
        for (int64_t p = 0; p < half; ++p) {
            const double angle = pos * inv_freq[p];
            out[(i * half + p) * 2] = static_cast<float>(std::cos(angle));
            out[(i * half + p) * 2 + 1] = static_cast<float>(std::sin(angle));
        }
    }
    return t;
}

Llm Llm::load(const Weights& w, const LlmOptions& options) {
    const std::optional<Weights> root = find_root(w);
    SD_CHECK(root.has_value(),
             "no LLM under '%s' (it needs model.embed_tokens.weight and "
             "model.layers.0.self_attn.q_proj.weight, or the same under model.language_model. "
             "or without model.; is the file given as --llm a decoder-only LLM?)",
             w.prefix().c_str());
    const Weights& m = *root;
    Llm llm;
    llm.config_ = read_config(m, options);
    const LlmConfig& c = llm.config_;
    llm.embed_tokens_ = m.get("embed_tokens.weight", {c.vocab, c.width});
    for (int64_t i = 0; i < c.layers; ++i)
        llm.blocks_.push_back(load_block(m["layers"][static_cast<int>(i)], c));
    llm.norm_ = m["norm"].get("weight", {c.width});
    // The LM head (logits) is no part of an encoder: bound only so that it is not reported
    // as an unused tensor.
    if (auto head = w.shape_of("lm_head.weight")) w.get("lm_head.weight", *head);
    w.check("LLM");
    llm.pages_ = w.pages();
    SD_LOG_INFO(
        "LLM: %lld blocks, width %lld, %lld heads / %lld key-value heads x %lld, feed-forward "
        "%lld, vocabulary %lld%s%s, rope theta %g (%s), embedding %s",
        (long long)c.layers, (long long)c.width, (long long)c.heads, (long long)c.kv_heads,
        (long long)c.head_dim, (long long)c.ffn, (long long)c.vocab, c.qk_norm ? ", q/k norms" : "",
        c.qkv_bias ? ", q/k/v biases" : "", static_cast<double>(c.rope_theta),
        c.rope_layout == RopeLayout::HalfSplit ? "half-split" : "interleaved",
        dtype_name(llm.embed_tokens_.dtype()));
    return llm;
}

Tensor Llm::embed(std::span<const int32_t> ids) const {
    const auto n = static_cast<int64_t>(ids.size());
    Tensor tokens = Tensor::empty({1, n}, DType::I32);
    std::copy(ids.begin(), ids.end(), tokens.data<int32_t>());
    const Tensor rows = rows_from_file(embed_tokens_, ids);
    if (!rows.defined()) return embedding(embed_tokens_, tokens);
    for (int64_t i = 0; i < n; ++i) tokens.data<int32_t>()[i] = static_cast<int32_t>(i);
    return embedding(rows, tokens);
}

void Llm::splice_embeddings(Tensor& x, std::span<const LlmEmbedSplice> splices) const {
    const int64_t n = x.size(1), width = config_.width;
    int64_t end_of_last = 0;
    for (const LlmEmbedSplice& s : splices) {
        SD_CHECK(s.rows.defined() && s.rows.dtype() == DType::F32 &&
                     (s.rows.dim() == 2 || (s.rows.dim() == 3 && s.rows.size(0) == 1)) &&
                     s.rows.size(-1) == width,
                 "LLM: spliced embeddings must be f32 [1, k, %lld]", (long long)width);
        const int64_t k = s.rows.size(-2);
        SD_CHECK(s.at >= end_of_last && s.at + k <= n,
                 "LLM: %lld embeddings spliced at token %lld of %lld (overlapping or past the "
                 "end)",
                 (long long)k, (long long)s.at, (long long)n);
        const Tensor rows = s.rows.contiguous();
        std::copy_n(rows.data<float>(), k * width, x.data<float>() + s.at * width);
        end_of_last = s.at + k;
    }
}

Tensor Llm::attention(const LlmBlock& b, const Tensor& x, const Tensor& rope,
                      const Tensor& mask) const {
    const LlmConfig& c = config_;
    const int64_t n = x.size(1), h = c.heads, kv = c.kv_heads, d = c.head_dim;
    Tensor q = b.q.forward(x).view({1, n, h, d});
    Tensor k = b.k.forward(x).view({1, n, kv, d});
    Tensor v = b.v.forward(x).view({1, n, kv, d});
    if (c.qk_norm) {  // RMS over each head's row, before the rotation
        q = rms_norm(q, b.q_norm, c.eps);
        k = rms_norm(k, b.k_norm, c.eps);
    }
    rotate(q, rope, c.rope_layout);  // q and k are fresh: rotated in place
    rotate(k, rope, c.rope_layout);
    return b.o.forward(grouped_query_attention(q, k, v, mask));
}

Tensor Llm::block(const LlmBlock& b, const Tensor& x, const Tensor& rope,
                  const Tensor& mask) const {
    const float eps = config_.eps;
    Tensor r = x + attention(b, rms_norm(x, b.input_norm, eps), rope, mask);
    const Tensor h = rms_norm(r, b.post_attention_norm, eps);
    const Tensor gated = silu(b.gate.forward(h)) * b.up.forward(h);
    return r + b.down.forward(gated);
}

Tensor Llm::forward(std::span<const int32_t> ids, std::span<const int> out_layers,
                    const LlmInput& input) const {
    SD_CHECK(!ids.empty(), "LLM: no token ids");
    const auto n = static_cast<int64_t>(ids.size());
    SD_CHECK(input.key_mask.empty() || input.key_mask.size() == ids.size(),
             "LLM: %zu mask values for %zu token ids", input.key_mask.size(), ids.size());
    SD_CHECK(input.positions.empty() || input.positions.size() == ids.size(),
             "LLM: %zu positions for %zu token ids", input.positions.size(), ids.size());
    Tensor mask;
    if (!input.key_mask.empty()) {  // [1, 1, 1, n]: -inf on padding keys
        mask = Tensor::empty({1, 1, 1, n});
        for (int64_t j = 0; j < n; ++j)
            mask.data<float>()[j] =
                input.key_mask[j] == 0.0f ? -std::numeric_limits<float>::infinity() : 0.0f;
    }
    const Tensor rope = llm_rope_table(input.positions, n, config_.head_dim, config_.rope_theta);
    const std::vector<int> wanted = wanted_layers(out_layers, config_.layers);
    const int final_layer = static_cast<int>(config_.layers) + 1;
    const bool want_final = wanted.empty() || wanted.back() == final_layer;
    // Blocks past the last layer asked for change nothing returned: not run.
    const int64_t run = want_final ? config_.layers : wanted.back();
    Tensor x = embed(ids);
    splice_embeddings(x, input.splices);
    std::vector<Tensor> kept;
    for (int64_t i = 0; i < run; ++i) {
        x = block(blocks_[i], x, rope, mask);
        if (std::binary_search(wanted.begin(), wanted.end(), static_cast<int>(i + 1)))
            kept.push_back(x);
    }
    if (!want_final) return kept.size() == 1 ? kept[0] : concat(kept, 2);
    const Tensor normed = rms_norm(x, norm_, config_.eps);
    if (kept.empty()) return normed;
    kept.push_back(normed);
    return concat(kept, 2);
}

}  // namespace sd
