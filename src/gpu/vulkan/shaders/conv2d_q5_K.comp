#version 450
#include "conv2d_op.glsl"
#include "weight_q5_K.glsl"
#include "gemm_common.glsl"
