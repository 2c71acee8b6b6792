#version 450
// Heads up to 512 wide (SD 1.x's 160, the VAE's one head of 512): q read from memory,
// 8 keys a tile, 128 output columns a dispatch.
#define MAX_D 512
#define KEYS 8
#include "attention_common.glsl"
