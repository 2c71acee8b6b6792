#version 450
// Heads up to 128 wide (the DiTs, SDXL): q in registers, 16 keys a tile.
#define MAX_D 128
#define KEYS 16
#define Q_IN_REGISTERS
#include "attention_common.glsl"
