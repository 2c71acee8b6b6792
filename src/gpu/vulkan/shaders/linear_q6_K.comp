#version 450
#include "linear_op.glsl"
#include "weight_q6_K.glsl"
#include "gemm_common.glsl"
