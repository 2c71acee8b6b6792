// The noise generators against torch's values in ../shared/fixtures/rng/rng_ref.tsv, bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "sampling/rng.h"
#include "test_util.h"

namespace sd {
namespace {

struct RefRow {
    std::string kind;  // cuda, cpu, cuda_seq, cpu_seq
    uint64_t seed = 0;
    std::vector<size_t> draws;  // sizes of consecutive draws from one generator
    std::vector<float> values;
};

std::vector<RefRow> load_rows() {
    const std::string path = test::fixtures_dir() + "/rng/rng_ref.tsv";
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    std::vector<RefRow> rows;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::istringstream ss(line);
        RefRow row;
        std::string seed, sizes;
        ss >> row.kind >> seed >> sizes;
        row.seed = std::stoull(seed);
        std::istringstream parts(sizes);
        for (std::string p; std::getline(parts, p, '+');) row.draws.push_back(std::stoul(p));
        for (float v; ss >> v;) row.values.push_back(v);
        rows.push_back(row);
    }
    return rows;
}

uint32_t bits(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

// Draws the row's sizes from one generator of its kind and compares every value's bits.
void check_row(const RefRow& row) {
    const RngType type = row.kind.rfind("cuda", 0) == 0 ? CUDA_RNG : CPU_RNG;
    std::unique_ptr<Rng> rng = make_rng(type, row.seed);
    std::vector<float> got;
    for (size_t n : row.draws) {
        std::vector<float> part = rng->randn(n);
        got.insert(got.end(), part.begin(), part.end());
    }
    ASSERT_EQ(got.size(), row.values.size()) << row.kind << " seed " << row.seed;
    int mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (bits(got[i]) != bits(row.values[i])) {
            if (mismatches++ < 5) {
                ADD_FAILURE() << row.kind << " seed " << row.seed << " value " << i << ": got "
                              << got[i] << ", want " << row.values[i];
            }
        }
    }
    EXPECT_EQ(mismatches, 0) << row.kind << " seed " << row.seed;
}

TEST(Rng, ReproducesEveryReferenceRowBitForBit) {
    const std::vector<RefRow> rows = load_rows();
    ASSERT_GE(rows.size(), 34u);
    int cuda = 0, cpu = 0, seq = 0;
    for (const RefRow& row : rows) {
        SCOPED_TRACE(row.kind + " " + std::to_string(row.seed));
        check_row(row);
        cuda += row.kind == "cuda";
        cpu += row.kind == "cpu";
        seq += row.draws.size() > 1;
    }
    EXPECT_EQ(cuda, 16);
    EXPECT_EQ(cpu, 16);
    EXPECT_EQ(seq, 2);
}

TEST(Rng, DocumentedFirstValues) {
    // The README's examples: torch.manual_seed(42); torch.randn(7, device="cuda") and
    // torch.manual_seed(0); torch.randn(7).
    EXPECT_EQ(make_rng(CUDA_RNG, 42)->randn(3),
              (std::vector<float>{0.194018871f, 2.16137385f, -0.172050595f}));
    EXPECT_EQ(make_rng(CPU_RNG, 0)->randn(3),
              (std::vector<float>{1.54099607f, -0.293428898f, -2.17878938f}));
}

TEST(Rng, ManualSeedRestartsAndCloneCopiesState) {
    for (RngType type : {STD_DEFAULT_RNG, CUDA_RNG, CPU_RNG}) {
        SCOPED_TRACE(static_cast<int>(type));
        std::unique_ptr<Rng> rng = make_rng(type, 7);
        const std::vector<float> first = rng->randn(5);  // odd: cpu keeps a cached value
        std::unique_ptr<Rng> copy = rng->clone();
        const std::vector<float> next = rng->randn(20);
        EXPECT_EQ(copy->randn(20), next);
        EXPECT_NE(next, rng->randn(20));
        rng->manual_seed(7);
        EXPECT_EQ(rng->randn(5), first);
    }
}

TEST(Rng, PhiloxOffsetAdvancesPerCall) {
    // Two draws of 5 are elements 0..4 of counters with offset 0 and 1, not 10 consecutive values.
    std::unique_ptr<Rng> a = make_rng(CUDA_RNG, 42);
    std::vector<float> first = a->randn(5);
    std::vector<float> second = a->randn(5);
    std::vector<float> ten = make_rng(CUDA_RNG, 42)->randn(10);
    EXPECT_EQ(first, std::vector<float>(ten.begin(), ten.begin() + 5));
    EXPECT_NE(second, std::vector<float>(ten.begin() + 5, ten.end()));
}

TEST(Rng, StdDefaultIsStdNormalWithAFreshDistributionPerCall) {
    std::default_random_engine engine(123u);
    std::vector<float> want;
    for (int call = 0; call < 3; ++call) {
        std::normal_distribution<float> normal(0.0f, 1.0f);  // drops its cached pair each call
        for (int i = 0; i < 3; ++i) want.push_back(normal(engine));
    }
    std::unique_ptr<Rng> rng = make_rng(STD_DEFAULT_RNG, 123);
    std::vector<float> got;
    for (int call = 0; call < 3; ++call) {
        std::vector<float> part = rng->randn(3);
        got.insert(got.end(), part.begin(), part.end());
    }
    EXPECT_EQ(got, want);
    // The seed is truncated to unsigned int, as the reference does.
    EXPECT_EQ(make_rng(STD_DEFAULT_RNG, (uint64_t{1} << 32) + 123)->randn(4),
              make_rng(STD_DEFAULT_RNG, 123)->randn(4));
}

TEST(Rng, RandnTensorIsRowMajorNoise) {
    // The initial latent noise: randn(C*H*W) from a fresh generator, in [C, H, W] order.
    Tensor t = randn_tensor(*make_rng(CUDA_RNG, 42), {4, 8, 8});
    EXPECT_EQ(t.shape(), Shape({4, 8, 8}));
    EXPECT_EQ(t.to_vector(), make_rng(CUDA_RNG, 42)->randn(256));
    EXPECT_EQ(randn_tensor(*make_rng(CPU_RNG, 0), {0}).numel(), 0);
}

TEST(Rng, ImageRngsShareOneGeneratorUnlessKindsDiffer) {
    // Same kind (or none given): the sampler continues the noise generator's stream.
    ImageRngs shared(CUDA_RNG, RNG_TYPE_COUNT, 42);
    EXPECT_TRUE(shared.shared());
    std::unique_ptr<Rng> ref = make_rng(CUDA_RNG, 42);
    EXPECT_EQ(shared.noise().randn(16), ref->randn(16));
    EXPECT_EQ(shared.sampler().randn(16), ref->randn(16));  // offset 1, not a fresh offset 0
    ImageRngs same(CPU_RNG, CPU_RNG, 5);
    EXPECT_TRUE(same.shared());
    // A different kind: its own generator with the same seed.
    ImageRngs split(CPU_RNG, CUDA_RNG, 42);
    EXPECT_FALSE(split.shared());
    EXPECT_EQ(split.noise().randn(16), make_rng(CPU_RNG, 42)->randn(16));
    EXPECT_EQ(split.sampler().randn(16), make_rng(CUDA_RNG, 42)->randn(16));
    EXPECT_THROW(ImageRngs(RNG_TYPE_COUNT, RNG_TYPE_COUNT, 1), Error);
}

TEST(Rng, BadInput) {
    EXPECT_THROW(make_rng(RNG_TYPE_COUNT, 1), Error);
    EXPECT_THROW(make_rng(static_cast<RngType>(-1), 1), Error);
    EXPECT_EQ(resolve_sampler_rng_type(RNG_TYPE_COUNT, CPU_RNG), CPU_RNG);
    EXPECT_EQ(resolve_sampler_rng_type(CUDA_RNG, CPU_RNG), CUDA_RNG);
    EXPECT_TRUE(make_rng(CPU_RNG, 1)->randn(0).empty());
}

}  // namespace
}  // namespace sd
