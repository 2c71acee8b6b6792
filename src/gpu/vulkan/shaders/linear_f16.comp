#version 450
#include "linear_op.glsl"
#include "weight_f16.glsl"
#include "gemm_common.glsl"
