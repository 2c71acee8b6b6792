// BrownianTree: W(t0) = 0, W(t1) ~ N(0, t1 - t0), and the value at a midpoint given both ends
// is the Brownian bridge mean plus sqrt(length / 4) times a normal draw of that node.
#include "sampling/brownian_tree.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "base/error.h"

namespace sd {
namespace {

constexpr int kMaxDepth = 30;

// splitmix64: independent seeds for the nodes of the tree.
uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

}  // namespace

BrownianTree::BrownianTree(uint64_t seed, float t0, float t1, Shape shape)
    : seed_(seed), t0_(t0), t1_(t1), shape_(std::move(shape)) {
    SD_CHECK(std::isfinite(t0) && std::isfinite(t1) && t0 < t1,
             "Brownian tree needs an interval t0 < t1, got [%g, %g]", t0, t1);
}

std::vector<double> BrownianTree::node_draw(uint64_t node) const {
    std::mt19937_64 gen(mix(seed_ ^ mix(node)));
    std::normal_distribution<double> normal;
    std::vector<double> out(static_cast<size_t>(shape_.numel()));
    for (double& v : out) v = normal(gen);
    return out;
}

std::vector<double> BrownianTree::value(double t) const {
    t = std::min(std::max(t, t0_), t1_);
    const size_t n = static_cast<size_t>(shape_.numel());
    std::vector<double> wa(n, 0.0), wb = node_draw(1);
    const double root_scale = std::sqrt(t1_ - t0_);
    for (double& v : wb) v *= root_scale;
    double a = t0_, b = t1_;
    uint64_t node = 2;  // heap numbering: node 1 draws W(t1), node k's halves are 2k, 2k + 1
    const double tol = (t1_ - t0_) * 1e-9;
    for (int depth = 0; depth < kMaxDepth; ++depth) {
        if (t - a <= tol) return wa;
        if (b - t <= tol) return wb;
        const double m = 0.5 * (a + b);
        const std::vector<double> z = node_draw(node);
        const double scale = std::sqrt((b - a) / 4.0);
        std::vector<double> wm(n);
        for (size_t i = 0; i < n; ++i) wm[i] = 0.5 * (wa[i] + wb[i]) + scale * z[i];
        if (t < m) {
            b = m;
            wb = std::move(wm);
            node = 2 * node;
        } else {
            a = m;
            wa = std::move(wm);
            node = 2 * node + 1;
        }
    }
    // Below the finest level: the bridge mean between the last two known values.
    const double w = (t - a) / (b - a);
    for (size_t i = 0; i < n; ++i) wa[i] = (1.0 - w) * wa[i] + w * wb[i];
    return wa;
}

Tensor BrownianTree::noise(float ta, float tb) const {
    const double dt = std::fabs(static_cast<double>(tb) - static_cast<double>(ta));
    SD_CHECK(dt > 0.0, "Brownian tree noise over an empty interval at %g", ta);
    const std::vector<double> wa = value(ta), wb = value(tb);
    std::vector<float> out(wa.size());
    const double inv = 1.0 / std::sqrt(dt);
    for (size_t i = 0; i < wa.size(); ++i) out[i] = static_cast<float>((wb[i] - wa[i]) * inv);
    return Tensor::from_vector(shape_, out);
}

}  // namespace sd
