#version 450
#include "linear_op.glsl"
#include "weight_f32.glsl"
#include "gemm_common.glsl"
