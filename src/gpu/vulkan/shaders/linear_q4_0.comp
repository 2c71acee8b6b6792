#version 450
#include "linear_op.glsl"
#include "weight_q4_0.glsl"
#include "gemm_common.glsl"
