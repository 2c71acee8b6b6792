#version 450
#include "linear_op.glsl"
#include "weight_q5_K.glsl"
#include "gemm_common.glsl"
