// Small synthetic LoRA files and models for the adapter tests.
#pragma once

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/log.h"
#include "io/tensor_writer.h"
#include "ops/ops.h"
#include "test_util.h"

namespace sd::test {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Weights of the small test models: an SD 1.x text encoder's q_proj and a UNet 3x3 conv.
inline constexpr const char* kQ =
    "cond_stage_model.transformer.text_model.encoder.layers.0.self_attn.q_proj.weight";
inline constexpr const char* kConv = "model.diffusion_model.input_blocks.1.0.in_layers.2.weight";

inline std::string lora_temp(const std::string& name) {
    return (std::filesystem::temp_directory_path() /
            ("sd_lora_" + std::to_string(::getpid()) + "_" + name))
        .string();
}

// Writes `tensors` (f32 values) as `dtype` into a safetensors (or .gguf) file.
inline std::string write_tensors(const std::string& name, const NamedTensors& tensors,
                                 DType dtype = DType::F32) {
    std::vector<OutputTensor> out;
    for (const auto& [n, t] : tensors) {
        const Tensor v = t;
        const DType d = t.dim() <= 1 ? DType::F32 : dtype;
        out.push_back({n, d, v.shape(), [v, d] { return d == DType::F32 ? v : convert(v, d); }});
    }
    const std::string path = lora_temp(name);
    if (path.size() > 5 && path.substr(path.size() - 5) == ".gguf")
        write_gguf(path, out);
    else
        write_safetensors(path, out);
    return path;
}

inline Tensor scalar_tensor(float v) {
    return Tensor::from_vector({1}, {v});
}

// Every log line at info and above while alive.
class LogCapture {
  public:
    LogCapture() { set_log_callback(&LogCapture::sink, this); }
    ~LogCapture() { set_log_callback(nullptr, nullptr); }
    const std::string& text() const { return text_; }

  private:
    static void sink(LogLevel level, const char* line, void* self) {
        if (level >= LogLevel::Info) static_cast<LogCapture*>(self)->text_ += line;
    }
    std::string text_;
};

inline float max_abs_diff(const Tensor& a, const Tensor& b) {
    const std::vector<float> x = a.contiguous().to_vector(), y = b.contiguous().to_vector();
    EXPECT_EQ(x.size(), y.size());
    float m = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
    return m;
}

}  // namespace sd::test
