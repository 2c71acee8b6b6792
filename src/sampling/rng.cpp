// The generator factory, the std_default generator and randn_tensor.
#include "sampling/rng.h"

#include <random>

#include "base/error.h"

namespace sd {

namespace {

// stable-diffusion.cpp STDDefaultRNG: std::default_random_engine seeded with the seed
// truncated to unsigned int, a new normal_distribution<float>(0, 1) for every call.
class StdDefaultRng final : public Rng {
  public:
    explicit StdDefaultRng(uint64_t seed) { manual_seed(seed); }

    void manual_seed(uint64_t seed) override { engine_.seed(static_cast<unsigned int>(seed)); }

    std::vector<float> randn(size_t n) override {
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> out(n);
        for (float& v : out) v = normal(engine_);
        return out;
    }

    std::unique_ptr<Rng> clone() const override { return std::make_unique<StdDefaultRng>(*this); }

  private:
    std::default_random_engine engine_;
};

}  // namespace

std::unique_ptr<Rng> make_std_default_rng(uint64_t seed) {
    return std::make_unique<StdDefaultRng>(seed);
}

std::unique_ptr<Rng> make_rng(RngType type, uint64_t seed) {
    switch (type) {
        case STD_DEFAULT_RNG:
            return make_std_default_rng(seed);
        case CUDA_RNG:
            return make_philox_rng(seed);
        case CPU_RNG:
            return make_mt19937_rng(seed);
        default:
            fail("unknown rng type %d (expected std_default, cuda or cpu)", static_cast<int>(type));
    }
}

RngType resolve_sampler_rng_type(RngType sampler_type, RngType rng_type) {
    return sampler_type == RNG_TYPE_COUNT ? rng_type : sampler_type;
}

ImageRngs::ImageRngs(RngType rng_type, RngType sampler_type, uint64_t seed)
    : noise_(make_rng(rng_type, seed)) {
    const RngType kind = resolve_sampler_rng_type(sampler_type, rng_type);
    if (kind != rng_type) sampler_ = make_rng(kind, seed);
}

Tensor randn_tensor(Rng& rng, const Shape& shape) {
    const int64_t n = shape.numel();
    SD_CHECK(n >= 0, "randn_tensor: invalid shape %s", shape.to_string().c_str());
    std::vector<float> values = rng.randn(static_cast<size_t>(n));
    return Tensor::from_vector(shape, values);
}

int64_t resolve_seed(int64_t seed) {
    if (seed >= 0) return seed;
    std::random_device device;
    return static_cast<int64_t>(device() & 0x7FFFFFFF);
}

}  // namespace sd
