#version 450
#include "conv2d_op.glsl"
#include "weight_f32.glsl"
#include "gemm_common.glsl"
