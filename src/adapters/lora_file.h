// A LoRA file (safetensors, GGUF or .ckpt/.pt) read into modules: the tensors one adapted
// layer owns, grouped by the name they share and the part each one is (kohya's lora_down /
// lora_up / alpha, PEFT's lora_A / lora_B, diffusers' lora.down / lora.up, LyCORIS LoHa's
// hada_* and LoKr's lokr_*, DoRA's dora_scale, a full .diff).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace sd {

enum class LoraKind { LowRank, LoHa, LoKr, Diff, Incomplete };

// The kind of a module that holds the parts (roles, as below) for which `has` is true.
LoraKind lora_kind(const std::function<bool(const std::string&)>& has);

struct LoraModule {
    std::string key;  // the name without the part ("lora_unet_down_blocks_0_..._to_q")
    // Parts by role: down, up, mid, alpha, scale, dora_scale, hada_w1_a ... lokr_t2, diff.
    // All f32 (converted once at load).
    std::map<std::string, Tensor> parts;
    size_t tensor_count = 0;  // file tensors the module holds

    LoraKind kind() const;
    bool has(const std::string& part) const { return parts.count(part) > 0; }
    const Tensor& part(const std::string& name) const { return parts.at(name); }
};

struct LoraFile {
    std::string path;
    std::string format;                // "safetensors", "gguf", "ckpt"
    std::vector<LoraModule> modules;   // in key order
    std::vector<std::string> unknown;  // tensors that are no LoRA part
    size_t tensor_count = 0;
};

// Opens and reads `path`; throws sd::Error naming the file when it is missing, truncated or
// not a tensor file.
LoraFile read_lora_file(const std::string& path);

// Opens `path` as a tensor file (headers only) and throws sd::Error naming it when it is
// missing, truncated or not a tensor file, or holds no LoRA tensor at all.
void check_lora_file(const std::string& path);

// Splits a tensor name into (module key, part) when it ends in a known LoRA part.
bool split_lora_name(const std::string& name, std::string& key, std::string& part);

}  // namespace sd
