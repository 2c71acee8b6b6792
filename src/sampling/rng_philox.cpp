// `--rng cuda`: Philox 4x32-10 with Box-Muller, as torch's CUDA randn reproduced on the CPU by
// the AUTOMATIC1111 webui (modules/rng_philox.py) and stable-diffusion.cpp (rng_philox.hpp).
#include <cmath>

#include "sampling/rng.h"

namespace sd {

namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;  // Philox 4x32 multipliers
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // Weyl key increments
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

struct Counter {
    uint32_t c[4];
};

// One Philox 4x32 round (rng_philox.py philox4_round).
void philox_round(Counter& ctr, uint32_t k0, uint32_t k1) {
    const uint64_t p0 = static_cast<uint64_t>(ctr.c[0]) * kPhiloxM0;
    const uint64_t p1 = static_cast<uint64_t>(ctr.c[2]) * kPhiloxM1;
    const Counter next = {
        {static_cast<uint32_t>(p1 >> 32) ^ ctr.c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ ctr.c[3] ^ k1, static_cast<uint32_t>(p0)}};
    ctr = next;
}

// Ten rounds with the key bumped between them (rng_philox.py philox4_32).
Counter philox4x32_10(Counter ctr, uint64_t key) {
    uint32_t k0 = static_cast<uint32_t>(key);
    uint32_t k1 = static_cast<uint32_t>(key >> 32);
    for (int r = 0; r < kPhiloxRounds - 1; ++r) {
        philox_round(ctr, k0, k1);
        k0 += kPhiloxW0;
        k1 += kPhiloxW1;
    }
    philox_round(ctr, k0, k1);
    return ctr;
}

// One normal value from two 32-bit draws (rng_philox.py box_muller). u and v are formed in
// float from the float-converted integers; log, sqrt and sin run in double with s rounded to
// float, as stable-diffusion.cpp's rng_philox.hpp computes them (checked bit for bit against
// torch's CUDA randn values).
float box_muller(uint32_t x, uint32_t y) {
    constexpr float kTwoPow32Inv = 2.3283064e-10f;
    constexpr float kTwoPow32Inv2Pi = 2.3283064e-10f * 6.2831855f;
    const float u = static_cast<float>(x) * kTwoPow32Inv + kTwoPow32Inv / 2;
    const float v = static_cast<float>(y) * kTwoPow32Inv2Pi + kTwoPow32Inv2Pi / 2;
    const float s = static_cast<float>(std::sqrt(-2.0 * std::log(static_cast<double>(u))));
    return static_cast<float>(static_cast<double>(s) * std::sin(static_cast<double>(v)));
}

class PhiloxRng final : public Rng {
  public:
    explicit PhiloxRng(uint64_t seed) { manual_seed(seed); }

    void manual_seed(uint64_t seed) override {
        seed_ = seed;
        offset_ = 0;
    }

    // Element i of call number `offset` uses counter {offset, 0, i, 0}.
    std::vector<float> randn(size_t n) override {
        std::vector<float> out(n);
        for (size_t i = 0; i < n; ++i) {
            const Counter ctr = {{offset_, 0u, static_cast<uint32_t>(i), 0u}};
            const Counter g = philox4x32_10(ctr, seed_);
            out[i] = box_muller(g.c[0], g.c[1]);
        }
        ++offset_;
        return out;
    }

    std::unique_ptr<Rng> clone() const override { return std::make_unique<PhiloxRng>(*this); }

  private:
    uint64_t seed_ = 0;
    uint32_t offset_ = 0;
};

}  // namespace

std::unique_ptr<Rng> make_philox_rng(uint64_t seed) {
    return std::make_unique<PhiloxRng>(seed);
}

}  // namespace sd
