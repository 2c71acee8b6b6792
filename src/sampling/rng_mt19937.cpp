// `--rng cpu`: torch's CPU generator (at::mt19937 + torch.randn's normal sampling), as
// stable-diffusion.cpp's rng_mt19937.hpp reproduces it.
#include <array>
#include <cmath>

#include "sampling/rng.h"

namespace sd {

namespace {

constexpr int kStateSize = 624;  // mt19937 N
constexpr int kShift = 397;      // mt19937 M
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;
constexpr int kFloatDigits = 24;   // std::numeric_limits<float>::digits
constexpr int kDoubleDigits = 53;  // std::numeric_limits<double>::digits
constexpr int kBlock = 16;         // torch normal_fill block

// torch at::mt19937_engine: 32-bit Mersenne Twister with torch's lazy state refill.
class Mt19937 {
  public:
    // at::mt19937_engine::init_with_uint32: the low 32 bits of the seed.
    void seed(uint64_t seed) {
        state_[0] = static_cast<uint32_t>(seed & 0xffffffffU);
        for (int j = 1; j < kStateSize; ++j) {
            const uint32_t prev = state_[j - 1];
            state_[j] = 1812433253U * (prev ^ (prev >> 30)) + static_cast<uint32_t>(j);
        }
        left_ = 1;
        next_ = 0;
    }

    // at::mt19937_engine::operator(): next tempered 32-bit output.
    uint32_t next_u32() {
        if (--left_ == 0) refill();
        uint32_t y = state_[next_++];
        y ^= (y >> 11);
        y ^= (y << 7) & 0x9d2c5680U;
        y ^= (y << 15) & 0xefc60000U;
        y ^= (y >> 18);
        return y;
    }

    // CPUGeneratorImpl::random64: the first draw is the high half.
    uint64_t next_u64() {
        const uint64_t hi = next_u32();
        const uint64_t lo = next_u32();
        return (hi << 32) | lo;
    }

  private:
    static uint32_t twist(uint32_t u, uint32_t v) {
        const uint32_t mixed = (u & kUpperMask) | (v & kLowerMask);
        return (mixed >> 1) ^ ((v & 1U) ? kMatrixA : 0U);
    }

    // at::mt19937_engine::next_state
    void refill() {
        uint32_t* p = state_.data();
        left_ = kStateSize;
        next_ = 0;
        for (int j = kStateSize - kShift + 1; --j; ++p) p[0] = p[kShift] ^ twist(p[0], p[1]);
        for (int j = kShift; --j; ++p) p[0] = p[kShift - kStateSize] ^ twist(p[0], p[1]);
        p[0] = p[kShift - kStateSize] ^ twist(p[0], state_[0]);
    }

    std::array<uint32_t, kStateSize> state_{};
    int left_ = 1;
    int next_ = 0;
};

class Mt19937Rng final : public Rng {
  public:
    explicit Mt19937Rng(uint64_t seed) { manual_seed(seed); }

    // CPUGeneratorImpl::set_current_seed: new engine, cached normal sample dropped.
    void manual_seed(uint64_t seed) override {
        engine_.seed(seed);
        has_next_normal_ = false;
        next_normal_ = 0.0;
    }

    // torch normal_kernel on a contiguous float tensor: normal_fill for >= 16 values,
    // otherwise one at::normal_distribution<double> sample per value.
    std::vector<float> randn(size_t n) override {
        std::vector<float> out(n);
        if (n >= kBlock) {
            normal_fill(out.data(), n);
        } else {
            for (float& v : out) v = static_cast<float>(normal_double());
        }
        return out;
    }

    std::unique_ptr<Rng> clone() const override { return std::make_unique<Mt19937Rng>(*this); }

  private:
    // at::uniform_real_distribution<float>(0, 1): 24 random bits / 2^24.
    float uniform_float() {
        constexpr uint32_t kMask = (1U << kFloatDigits) - 1;
        constexpr float kDivisor = 1.0f / static_cast<float>(1U << kFloatDigits);
        return static_cast<float>(engine_.next_u32() & kMask) * kDivisor;
    }

    // at::uniform_real_distribution<double>(0, 1): 53 random bits / 2^53.
    double uniform_double() {
        constexpr uint64_t kMask = (uint64_t{1} << kDoubleDigits) - 1;
        constexpr double kDivisor = 1.0 / static_cast<double>(uint64_t{1} << kDoubleDigits);
        return static_cast<double>(engine_.next_u64() & kMask) * kDivisor;
    }

    // at::normal_distribution<double>: Box-Muller, the sine value cached in the generator.
    double normal_double() {
        if (has_next_normal_) {
            has_next_normal_ = false;
            return next_normal_;
        }
        const double u1 = uniform_double();
        const double u2 = uniform_double();
        const double r = std::sqrt(-2.0 * std::log1p(-u2));
        const double theta = 2.0 * 3.14159265358979323846 * u1;
        next_normal_ = r * std::sin(theta);
        has_next_normal_ = true;
        return r * std::cos(theta);
    }

    // torch normal_fill_16: Box-Muller in float over data[0..8) and data[8..16).
    static void normal_fill_16(float* data) {
        for (int j = 0; j < kBlock / 2; ++j) {
            const float u1 = 1.0f - data[j];
            const float u2 = data[j + kBlock / 2];
            const float radius = std::sqrt(-2.0f * std::log(u1));
            const float theta = 2.0f * 3.14159265358979323846f * u2;
            data[j] = radius * std::cos(theta);
            data[j + kBlock / 2] = radius * std::sin(theta);
        }
    }

    // torch normal_fill: all uniforms first, then blocks of 16; a ragged tail recomputes the
    // last 16 values from 16 fresh uniforms.
    void normal_fill(float* data, size_t n) {
        for (size_t i = 0; i < n; ++i) data[i] = uniform_float();
        for (size_t i = 0; i + kBlock <= n; i += kBlock) normal_fill_16(data + i);
        if (n % kBlock != 0) {
            float* tail = data + n - kBlock;
            for (int i = 0; i < kBlock; ++i) tail[i] = uniform_float();
            normal_fill_16(tail);
        }
    }

    Mt19937 engine_;
    bool has_next_normal_ = false;
    double next_normal_ = 0.0;
};

}  // namespace

std::unique_ptr<Rng> make_mt19937_rng(uint64_t seed) {
    return std::make_unique<Mt19937Rng>(seed);
}

}  // namespace sd
