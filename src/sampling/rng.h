// Noise generators: the three `--rng` / `--sampler-rng` kinds of stable-diffusion.cpp, each
// reproducing its reference generator bit for bit.
//
//   STD_DEFAULT_RNG  std::default_random_engine seeded with (unsigned)seed, one fresh
//                    std::normal_distribution<float> per randn() call (so the pair cached by
//                    the distribution is dropped between calls), as stable-diffusion.cpp's
//                    STDDefaultRNG. Depends on the C++ library (libstdc++ here).
//   CUDA_RNG         torch's CUDA randn as the AUTOMATIC1111 webui reproduces it on the CPU
//                    (rng_philox.py): Philox 4x32-10 keyed by the 64-bit seed, counter
//                    {offset, 0, i, 0} for element i, one Box-Muller value per element; every
//                    randn() call uses the next offset (0, 1, 2, ...).
//   CPU_RNG          torch's CPU generator: mt19937 seeded with the low 32 bits of the seed;
//                    randn(n) for n >= 16 fills 16 at a time with Box-Muller in float (the
//                    last 16 redrawn when n % 16 != 0), below 16 one double Box-Muller value a
//                    time with the second value cached in the generator across calls.
//
// How the pipeline draws (stable-diffusion.cpp generate_image and its context setup, checked
// against its source):
//   - image b of a batch uses seed + b;
//   - the sampler generator (`--sampler-rng`) is the noise generator itself (one object) unless
//     `--sampler-rng` names a different kind, in which case it is a second generator; for each
//     image both are re-seeded with that seed (ImageRngs below does this);
//   - the initial noise of a latent of shape [C, H, W] is randn(C*H*W) from the noise
//     generator, in row-major [C, H, W] order (the order of the reference's [W, H, C] ggml
//     tensor in memory), then scaled by sigma_0 (Denoiser::noise_scaling);
//   - ancestral / SDE samplers draw each step's noise as randn(numel(x)) from the sampler
//     generator: with a shared generator they continue after the initial noise (for cuda:
//     Philox offsets 1, 2, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "stable-diffusion.h"
#include "tensor/tensor.h"

namespace sd {

using RngType = rng_type_t;

class Rng {
  public:
    virtual ~Rng() = default;

    // Restarts the generator as if freshly constructed with this seed.
    virtual void manual_seed(uint64_t seed) = 0;
    // n standard-normal values; the generator's state advances.
    virtual std::vector<float> randn(size_t n) = 0;
    // An independent copy with the same state.
    virtual std::unique_ptr<Rng> clone() const = 0;
};

// `--sampler-rng`: the sampler generator's kind, the noise generator's when not given
// (RNG_TYPE_COUNT).
RngType resolve_sampler_rng_type(RngType sampler_type, RngType rng_type);

// A generator of the kind, seeded. Throws sd::Error on an unknown kind.
std::unique_ptr<Rng> make_rng(RngType type, uint64_t seed);

std::unique_ptr<Rng> make_std_default_rng(uint64_t seed);
std::unique_ptr<Rng> make_philox_rng(uint64_t seed);   // rng_philox.cpp
std::unique_ptr<Rng> make_mt19937_rng(uint64_t seed);  // rng_mt19937.cpp

// The generators of one image: noise() for the initial latent noise, sampler() for the
// sampler's noise, the same object unless the sampler kind differs from the noise kind.
class ImageRngs {
  public:
    // sampler_type RNG_TYPE_COUNT means "as rng_type". Throws sd::Error on an unknown kind.
    ImageRngs(RngType rng_type, RngType sampler_type, uint64_t seed);

    Rng& noise() { return *noise_; }
    Rng& sampler() { return sampler_ ? *sampler_ : *noise_; }
    bool shared() const { return sampler_ == nullptr; }

  private:
    std::unique_ptr<Rng> noise_;
    std::unique_ptr<Rng> sampler_;  // null when shared
};

// An f32 tensor of this shape filled with rng.randn(numel) in row-major order.
Tensor randn_tensor(Rng& rng, const Shape& shape);

// The seed of a request: a negative one draws a random seed in [0, 2^31) (the reference
// draws rand()); the library, sd-cli and sd-server all settle seeds here.
int64_t resolve_seed(int64_t seed);
// The seed of image `index` of a batch: seed + index, as the reference.
inline int64_t batch_image_seed(int64_t seed, int index) {
    return seed + index;
}

}  // namespace sd
