#version 450
#include "linear_op.glsl"
#include "weight_q8_0.glsl"
#include "gemm_common.glsl"
