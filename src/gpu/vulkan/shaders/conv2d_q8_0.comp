#version 450
#include "conv2d_op.glsl"
#include "weight_q8_0.glsl"
#include "gemm_common.glsl"
