#version 450
#include "linear_op.glsl"
#include "weight_bf16.glsl"
#include "gemm_common.glsl"
