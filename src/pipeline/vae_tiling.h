// VAE decoding in tiles, so a large image decodes in bounded memory: the latent is cut
// into overlapping tiles, each decoded alone, and the decoded tiles are blended with
// weights that fall linearly to zero across the overlap, so no seam shows.
#pragma once

#include <functional>

#include "models/autoencoder_kl.h"

namespace sd {

// Any decoder of latents [N, C, h, w] to images [M, C', f h, f w] (the KL VAE and TAESD: M = N,
// f = 8; a video VAE: M frames of N latent frames, f = 8 or 16), f read from the first tile.
using TileDecoder = std::function<Tensor(const Tensor& latent_tile)>;

// z: [N, C, h, w] latents (already divided by the latent scale). tile: tile edge in latent
// pixels (>= 8); overlap: the fraction of a tile shared with its neighbour, in [0, 0.5].
Tensor decode_tiled(const AutoencoderKL& vae, const Tensor& z, int tile, float overlap);
Tensor decode_tiled(const TileDecoder& decode, const Tensor& z, int tile, float overlap);

}  // namespace sd
