// Row conversions of every dtype (tensor/quant.h) against the reference engine's test
// vectors in fixtures/quant, the fast paths against the reference path on every ISA this
// machine runs, round trips, and bad input.
//
// Tolerances: dequantization is bit-exact everywhere (fixtures and fast paths; the one
// allowance is that a NaN only has to stay a NaN, because F16C quiets signalling-NaN
// halves). Quantization is byte-exact with the fixtures for f16, bf16, q4_0, q4_1, q5_0,
// q5_1 and q8_0; for the k-quants and iq4 types the RMSE of dequant(quant(x)) - x must be
// at most 1.02x the reference quantizer's figure in reference_rmse.txt.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/error.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"
#include "tensor/quant_blocks.h"
#include "test_util.h"

namespace sd {
namespace {

constexpr int64_t kFixtureRows = 8;
constexpr int64_t kFixtureCols = 512;

const std::vector<DType>& fixture_types() {
    static const std::vector<DType> types = {DType::F16,    DType::BF16,  DType::Q4_0, DType::Q4_1,
                                             DType::Q5_0,   DType::Q5_1,  DType::Q8_0, DType::Q2_K,
                                             DType::Q3_K,   DType::Q4_K,  DType::Q5_K, DType::Q6_K,
                                             DType::IQ4_NL, DType::IQ4_XS};
    return types;
}

bool exact_quantizer(DType t) {
    switch (t) {
        case DType::F16:
        case DType::BF16:
        case DType::Q4_0:
        case DType::Q4_1:
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q8_0:
            return true;
        default:
            return false;
    }
}

std::vector<DType> every_dtype() {
    size_t count = 0;
    const DType* all = all_dtypes(&count);
    return std::vector<DType>(all, all + count);
}

std::string fixture_path(const std::string& name) {
    return test::fixtures_dir() + "/quant/" + name;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << "cannot open " << path;
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::vector<float> read_floats(const std::string& path) {
    std::vector<uint8_t> bytes = read_bytes(path);
    std::vector<float> v(bytes.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

// reference_rmse.txt: "q4_K     block=256 type_size=144 bytes=2304 rmse=0.634710" lines.
std::map<std::string, double> reference_rmse() {
    std::map<std::string, double> out;
    std::ifstream f(fixture_path("reference_rmse.txt"));
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream ls(line);
        std::string name, field;
        ls >> name;
        while (ls >> field) {
            if (field.rfind("rmse=", 0) == 0) out[name] = std::stod(field.substr(5));
        }
    }
    return out;
}

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Index of the first value that differs in its bits (NaN matches NaN), or -1.
int64_t first_bit_mismatch(const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        if (bits_of(a[i]) != bits_of(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) return i;
    }
    return -1;
}

// Quantizes rows of `cols` values with the public API.
std::vector<uint8_t> quantize_rows(DType t, const std::vector<float>& x, int64_t cols, bool ref) {
    const int64_t rows = static_cast<int64_t>(x.size()) / cols;
    const size_t rb = row_bytes(t, cols);
    std::vector<uint8_t> q(rb * static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        if (ref) {
            ref::quantize_row(t, x.data() + r * cols, q.data() + r * rb, cols);
        } else {
            quantize_row(t, x.data() + r * cols, q.data() + r * rb, cols);
        }
    }
    return q;
}

std::vector<float> dequantize_rows(DType t, const std::vector<uint8_t>& q, int64_t cols, bool ref) {
    const size_t rb = row_bytes(t, cols);
    const int64_t rows = static_cast<int64_t>(q.size() / rb);
    std::vector<float> y(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
        if (ref) {
            ref::dequantize_row(t, q.data() + r * rb, y.data() + r * cols, cols);
        } else {
            dequantize_row(t, q.data() + r * rb, y.data() + r * cols, cols);
        }
    }
    return y;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        double d = static_cast<double>(a[i]) - b[i];
        sum += d * d;
    }
    return std::sqrt(sum / static_cast<double>(a.size()));
}

// Random blocks of `type`: random bytes, so every bit pattern of quants and scales occurs.
std::vector<uint8_t> random_blocks(DType type, int64_t nblocks, uint32_t seed) {
    std::mt19937 gen(seed);
    std::vector<uint8_t> bytes(dtype_info(type).type_size * static_cast<size_t>(nblocks));
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(gen() >> 24);
    return bytes;
}

std::string isa_label(Isa isa) {
    return isa_name(isa);
}

// ---- fixtures ----

TEST(QuantFixture, DequantizeIsBitExactForEveryType) {
    for (DType t : fixture_types()) {
        SCOPED_TRACE(dtype_name(t));
        std::vector<uint8_t> q =
            read_bytes(fixture_path(std::string(dtype_name(t)) + ".quant.bin"));
        std::vector<float> want =
            read_floats(fixture_path(std::string(dtype_name(t)) + ".dequant_f32.bin"));
        ASSERT_EQ(q.size(), row_bytes(t, kFixtureCols) * kFixtureRows);
        ASSERT_EQ(want.size(), static_cast<size_t>(kFixtureRows * kFixtureCols));
        std::vector<float> got = dequantize_rows(t, q, kFixtureCols, /*ref=*/true);
        int64_t bad = first_bit_mismatch(got.data(), want.data(), static_cast<int64_t>(got.size()));
        EXPECT_EQ(bad, -1) << "reference path, first mismatch at " << bad << ": got "
                           << (bad >= 0 ? got[bad] : 0.f) << ", want "
                           << (bad >= 0 ? want[bad] : 0.f);
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            std::vector<float> fast = dequantize_rows(t, q, kFixtureCols, /*ref=*/false);
            bad = first_bit_mismatch(fast.data(), want.data(), static_cast<int64_t>(fast.size()));
            EXPECT_EQ(bad, -1) << isa_label(isa) << " path, first mismatch at " << bad;
        }
    }
}

TEST(QuantFixture, QuantizeIsByteExactForPlainAndLegacyTypes) {
    std::vector<float> x = read_floats(fixture_path("input_f32.bin"));
    ASSERT_EQ(x.size(), static_cast<size_t>(kFixtureRows * kFixtureCols));
    for (DType t : fixture_types()) {
        if (!exact_quantizer(t)) continue;
        SCOPED_TRACE(dtype_name(t));
        std::vector<uint8_t> want =
            read_bytes(fixture_path(std::string(dtype_name(t)) + ".quant.bin"));
        for (bool ref : {true, false}) {
            std::vector<uint8_t> got = quantize_rows(t, x, kFixtureCols, ref);
            ASSERT_EQ(got.size(), want.size());
            size_t bad = 0;
            while (bad < got.size() && got[bad] == want[bad]) ++bad;
            EXPECT_EQ(bad, got.size())
                << (ref ? "ref" : "fast") << ": first differing byte at " << bad;
        }
    }
}

TEST(QuantFixture, KQuantAndIq4RmseWithin2PercentOfReference) {
    std::vector<float> x = read_floats(fixture_path("input_f32.bin"));
    ASSERT_EQ(x.size(), static_cast<size_t>(kFixtureRows * kFixtureCols));
    std::map<std::string, double> want = reference_rmse();
    for (DType t : fixture_types()) {
        SCOPED_TRACE(dtype_name(t));
        ASSERT_TRUE(want.count(dtype_name(t))) << "no reference figure";
        std::vector<uint8_t> q = quantize_rows(t, x, kFixtureCols, /*ref=*/true);
        std::vector<float> y = dequantize_rows(t, q, kFixtureCols, /*ref=*/true);
        const double got = rmse(y, x);
        std::vector<uint8_t> ref_q =
            read_bytes(fixture_path(std::string(dtype_name(t)) + ".quant.bin"));
        const size_t bsz = dtype_info(t).type_size;
        int same = 0, blocks = static_cast<int>(q.size() / bsz);
        for (int b = 0; b < blocks; ++b) {
            same += std::memcmp(q.data() + b * bsz, ref_q.data() + b * bsz, bsz) == 0;
        }
        const double limit = want[dtype_name(t)] * 1.02;
        // Printed so the figures can be tracked; the reference's own RMSE is rounded to 6
        // digits, so allow that much on top for the byte-exact types.
        std::printf("[ rmse     ] %-7s ours %.6f  reference %.6f  (%d of %d blocks identical)\n",
                    dtype_name(t), got, want[dtype_name(t)], same, blocks);
        EXPECT_LE(got, limit + 1e-6);
    }
}

// ---- fast paths ----

TEST(QuantFast, DequantizeEqualsReferenceOnRandomBlocksOnEveryIsa) {
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        // An odd number of blocks so vector loops leave tails.
        const int64_t nblocks = is_quantized(t) ? 37 : 1037;
        const int64_t n = nblocks * block_size(t);
        std::vector<uint8_t> q = random_blocks(t, nblocks, 1234u + static_cast<uint32_t>(t));
        std::vector<float> want(static_cast<size_t>(n));
        ref::dequantize_row(t, q.data(), want.data(), n);
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            std::vector<float> got(static_cast<size_t>(n), -1.f);
            dequantize_row(t, q.data(), got.data(), n);
            int64_t bad = first_bit_mismatch(got.data(), want.data(), n);
            EXPECT_EQ(bad, -1) << isa_label(isa) << ": first mismatch at " << bad << ": got "
                               << (bad >= 0 ? got[bad] : 0.f) << ", want "
                               << (bad >= 0 ? want[bad] : 0.f);
        }
    }
}

TEST(QuantFast, EveryRowLengthFromOneBlockUp) {
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        for (int64_t nblocks : {1, 2, 3, 5, 8, 9, 16, 17, 33}) {
            const int64_t n = nblocks * block_size(t);
            std::vector<uint8_t> q = random_blocks(t, nblocks, static_cast<uint32_t>(nblocks));
            std::vector<float> want(static_cast<size_t>(n) + 1, 7.f);
            ref::dequantize_row(t, q.data(), want.data(), n);
            for (Isa isa : test::available_isas()) {
                test::IsaScope scope(isa);
                // One guard value past the end must stay untouched.
                std::vector<float> got(static_cast<size_t>(n) + 1, 7.f);
                dequantize_row(t, q.data(), got.data(), n);
                EXPECT_EQ(first_bit_mismatch(got.data(), want.data(), n + 1), -1)
                    << isa_label(isa) << ", " << nblocks << " blocks";
            }
        }
    }
}

TEST(QuantFast, UnalignedSourceAndDestination) {
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        const int64_t nblocks = is_quantized(t) ? 5 : 133;
        const int64_t n = nblocks * block_size(t);
        std::vector<uint8_t> q = random_blocks(t, nblocks, 99);
        std::vector<uint8_t> shifted(q.size() + 1);
        std::memcpy(shifted.data() + 1, q.data(), q.size());
        std::vector<float> want(static_cast<size_t>(n));
        ref::dequantize_row(t, q.data(), want.data(), n);
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            std::vector<float> got(static_cast<size_t>(n) + 1);
            dequantize_row(t, shifted.data() + 1, got.data() + 1, n);
            EXPECT_EQ(first_bit_mismatch(got.data() + 1, want.data(), n), -1) << isa_label(isa);
        }
    }
}

// ---- round trips ----

// Normalised RMSE bound (RMSE / RMS of the data) for uniform [-1, 1) data, per type; each
// is about 1.3x what the reference quantizer reaches on such data.
double round_trip_bound(DType t) {
    switch (t) {
        case DType::F32:
            return 0;
        case DType::F16:
            return 4e-4;
        case DType::BF16:
            return 3e-3;
        case DType::I32:
            return 1.0;  // rounding to integers: |err| <= 0.5 everywhere
        case DType::Q8_0:
            return 6e-3;
        case DType::Q6_K:
            return 1.5e-2;
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q5_K:
            return 3.5e-2;
        case DType::Q4_0:
        case DType::Q4_1:
        case DType::Q4_K:
        case DType::IQ4_NL:
        case DType::IQ4_XS:
            return 7e-2;
        case DType::Q3_K:
            return 0.16;
        case DType::Q2_K:
            return 0.30;
    }
    return 0;
}

TEST(QuantRoundTrip, ErrorWithinBoundForEveryType) {
    const int64_t cols = 1024, rows = 3;
    Tensor xt = test::random_tensor({rows * cols}, 7);
    std::vector<float> x = xt.to_vector();
    double rms = 0;
    for (float v : x) rms += static_cast<double>(v) * v;
    rms = std::sqrt(rms / static_cast<double>(x.size()));
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        std::vector<uint8_t> q = quantize_rows(t, x, cols, false);
        std::vector<float> y = dequantize_rows(t, q, cols, false);
        const double err = rmse(y, x) / rms;
        if (t == DType::I32) {
            for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(y[i] - x[i]), 0.5f);
        } else {
            EXPECT_LE(err, round_trip_bound(t));
        }
        // Quantizing is deterministic and the fast path matches the reference path.
        EXPECT_EQ(q, quantize_rows(t, x, cols, true));
        EXPECT_EQ(first_bit_mismatch(y.data(), dequantize_rows(t, q, cols, true).data(),
                                     static_cast<int64_t>(y.size())),
                  -1);
    }
}

TEST(QuantRoundTrip, ZerosStayZero) {
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        const int64_t n = 2 * 256;
        std::vector<float> x(n, 0.f);
        std::vector<uint8_t> q(row_bytes(t, n));
        quantize_row(t, x.data(), q.data(), n);
        std::vector<float> y(n, 1.f);
        dequantize_row(t, q.data(), y.data(), n);
        for (float v : y) ASSERT_EQ(v, 0.f);
    }
}

TEST(QuantRoundTrip, ConstantAndSparseBlocks) {
    // One value per block, or all equal, are edge cases of the scale searches.
    for (DType t : every_dtype()) {
        if (t == DType::I32) continue;  // rounds 0.25 and 0.5 to 0 by design
        SCOPED_TRACE(dtype_name(t));
        const int64_t n = 512;
        std::vector<float> x(n, 0.f);
        for (int64_t i = 0; i < n; i += 37) x[i] = (i % 2 ? -1.f : 1.f) * 0.5f;
        for (int64_t i = 256; i < n; ++i) x[i] = 0.25f;
        std::vector<uint8_t> q(row_bytes(t, n));
        quantize_row(t, x.data(), q.data(), n);
        std::vector<float> y(n);
        dequantize_row(t, q.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            ASSERT_TRUE(std::isfinite(y[i])) << i;
            // Every type keeps such values within a fifth of the largest one.
            ASSERT_NEAR(y[i], x[i], 0.1f) << i;
        }
    }
}

TEST(QuantRoundTrip, PlainTypesAreExactOnRepresentableValues) {
    std::vector<float> x = {0.f, -0.f, 1.f, -2.5f, 65504.f, 6.103515625e-05f, 3.f, -1024.f};
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32}) {
        SCOPED_TRACE(dtype_name(t));
        std::vector<uint8_t> q(row_bytes(t, 8));
        quantize_row(t, x.data(), q.data(), 8);
        std::vector<float> y(8);
        dequantize_row(t, q.data(), y.data(), 8);
        for (int i = 0; i < 8; ++i) {
            if (t == DType::I32 && (i == 3 || i == 5)) continue;  // not integers
            if (t == DType::BF16 && (i == 4)) continue;           // 65504 needs 11 bits
            EXPECT_EQ(y[i], x[i]) << i;
        }
    }
}

TEST(QuantPlain, I32RoundsToNearestEvenAndSaturates) {
    std::vector<float> x = {0.5f, 1.5f,  2.5f, -0.5f, -1.5f,
                            2.4f, -2.6f, 3e9f, -3e9f, std::numeric_limits<float>::quiet_NaN()};
    std::vector<int32_t> want = {0, 2, 2, 0, -2, 2, -3, INT32_MAX, INT32_MIN, 0};
    std::vector<int32_t> got(x.size());
    quantize_row(DType::I32, x.data(), got.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(got, want);
    std::vector<int32_t> ints = {7, -8, 16777217, INT32_MIN};
    std::vector<float> f(ints.size());
    dequantize_row(DType::I32, ints.data(), f.data(), 4);
    EXPECT_EQ(f[0], 7.f);
    EXPECT_EQ(f[1], -8.f);
    EXPECT_EQ(f[2], static_cast<float>(16777217));
    EXPECT_EQ(f[3], -2147483648.f);
}

TEST(QuantPlain, F16AndBf16SpecialValues) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-8f, 70000.f};
    for (DType t : {DType::F16, DType::BF16}) {
        SCOPED_TRACE(dtype_name(t));
        std::vector<uint16_t> q(x.size());
        quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
        for (Isa isa : test::available_isas()) {
            test::IsaScope scope(isa);
            std::vector<float> y(x.size());
            dequantize_row(t, q.data(), y.data(), static_cast<int64_t>(x.size()));
            EXPECT_EQ(y[0], inf);
            EXPECT_EQ(y[1], -inf);
            EXPECT_TRUE(std::isnan(y[2]));
            if (t == DType::F16) {
                EXPECT_EQ(y[4], inf);  // beyond the f16 range
            }
        }
    }
}

// ---- bad input ----

TEST(QuantErrors, RowLengthNotAMultipleOfTheBlockThrows) {
    for (DType t : every_dtype()) {
        if (!is_quantized(t)) continue;
        SCOPED_TRACE(dtype_name(t));
        std::vector<float> f(1024);
        std::vector<uint8_t> q(1024);
        const int64_t n = block_size(t) + 1;
        EXPECT_THROW(dequantize_row(t, q.data(), f.data(), n), Error);
        EXPECT_THROW(quantize_row(t, f.data(), q.data(), n), Error);
        EXPECT_THROW(ref::dequantize_row(t, q.data(), f.data(), n), Error);
        EXPECT_THROW(ref::quantize_row(t, f.data(), q.data(), n), Error);
        try {
            quantize_row(t, f.data(), q.data(), n);
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(dtype_name(t)), std::string::npos) << e.what();
        }
    }
}

TEST(QuantErrors, NegativeLengthNullPointerAndUnknownTypeThrow) {
    std::vector<float> f(64);
    std::vector<uint8_t> q(64);
    EXPECT_THROW(dequantize_row(DType::F16, q.data(), f.data(), -2), Error);
    EXPECT_THROW(quantize_row(DType::Q8_0, nullptr, q.data(), 32), Error);
    EXPECT_THROW(dequantize_row(DType::Q8_0, q.data(), nullptr, 32), Error);
    for (int id : {4, 5, 9, 15, 31, 99, -1}) {
        EXPECT_THROW(dequantize_row(static_cast<DType>(id), q.data(), f.data(), 0), Error) << id;
        EXPECT_THROW(ref::quantize_row(static_cast<DType>(id), f.data(), q.data(), 0), Error) << id;
    }
    // n == 0 is a valid empty row.
    EXPECT_NO_THROW(dequantize_row(DType::Q4_K, nullptr, nullptr, 0));
}

TEST(QuantErrors, NonFiniteInputNeverCrashes) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (DType t : every_dtype()) {
        SCOPED_TRACE(dtype_name(t));
        const int64_t n = 512;
        std::vector<float> x(n);
        for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 13) - 6.f;
        x[3] = nan;
        x[40] = inf;
        x[300] = -inf;
        x[301] = 3e38f;
        for (int64_t i = 400; i < 432; ++i) x[i] = nan;  // a whole block of NaN
        std::vector<uint8_t> q(row_bytes(t, n));
        EXPECT_NO_THROW(quantize_row(t, x.data(), q.data(), n));
        std::vector<float> y(n);
        EXPECT_NO_THROW(dequantize_row(t, q.data(), y.data(), n));
    }
}

}  // namespace
}  // namespace sd
