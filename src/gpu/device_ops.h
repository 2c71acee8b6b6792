// The ops of src/ops on device tensors: each src/ops entry point hands its call here when an
// input is on a device (gpu::on_device), so model code runs unchanged on a device. The call is
// recorded into the inputs' stream; results are device tensors of the same stream. Host
// tensors among the inputs are weights and constants (a layer's weight and bias, a mask, a
// RoPE table): the stream uploads each once and keeps it. An op without a device kernel runs
// on the host through run_on_host() with a one-time warning naming it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/conv.h"

namespace sd::on_device {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options);
void conv2d_into(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& options, const Tensor& out);
Tensor conv2d_add(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Conv2dOptions& options, const Tensor& residual);

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias,
                  float eps, bool silu);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps);
Tensor softmax(const Tensor& x, int dim);
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 const AttentionOptions& options);

enum class Arith { Add, Sub, Mul, Div };
Tensor arith(Arith op, const Tensor& a, const Tensor& b);
enum class Pointwise { Silu, Gelu, GeluTanh, QuickGelu, Sigmoid, Tanh, Clamp, Scale, AddScalar };
// op(x); a and b are clamp's bounds, scale's factor, add_scalar's addend.
Tensor pointwise(Pointwise op, const Tensor& x, float a = 0.0f, float b = 0.0f);
Tensor geglu(const Tensor& x);
void add_scaled_into(const Tensor& a, const Tensor& b, float s, const Tensor& out);

Tensor concat(const std::vector<Tensor>& parts, int dim);
Tensor permute_copy(const Tensor& x, const std::vector<int>& order);
Tensor pad2d(const Tensor& x, int64_t left, int64_t right, int64_t top, int64_t bottom,
             float value);
Tensor upsample_nearest2x(const Tensor& x);
void copy_into(const Tensor& src, const Tensor& dst);
Tensor contiguous(const Tensor& x);
Tensor clone(const Tensor& x);  // a packed copy, always (Tensor::clone of a device tensor)

// `op` computed on the host: the device inputs are brought over (a submission), `compute`
// runs on host tensors, its result goes back to the inputs' device. Warns once per process
// and op name; counted in StreamStats::cpu_fallbacks.
Tensor run_on_host(const char* op, const std::vector<Tensor>& inputs,
                   const std::function<Tensor(const std::vector<Tensor>&)>& compute);

// True when any defined input is on a device.
bool any(std::initializer_list<const Tensor*> inputs);

}  // namespace sd::on_device
