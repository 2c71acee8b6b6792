#include <gtest/gtest.h>

#include <cstring>

#include "io/gguf_format.h"
#include "io/tensor_file.h"
#include "io/tensor_writer.h"
#include "io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using test::error_of;
using test::write_temp;

OutputTensor out_of(const std::string& name, const Tensor& t) {
    return {name, t.dtype(), t.shape(), [t] { return t; }};
}

TEST(Gguf, WriteThenReadRoundTripWithMetadata) {
    Tensor a = test::random_tensor({3, 64}, 1);
    Tensor q = Tensor::empty({2, 64}, DType::Q8_0);
    for (size_t i = 0; i < q.nbytes(); ++i)
        static_cast<uint8_t*>(q.data_ptr())[i] = static_cast<uint8_t>(i * 7);
    Tensor s = test::random_tensor({5}, 2);
    std::map<std::string, MetadataValue> meta;
    meta["general.name"] = {std::string("test model")};
    meta["u"] = {uint64_t{7}};
    meta["big"] = {uint64_t{1} << 40};
    meta["i"] = {int64_t{-3}};
    meta["f"] = {0.5};
    meta["b"] = {true};
    meta["tokens"] = {MetadataArray{{std::string("a")}, {std::string("bc")}}};
    meta["nested"] = {MetadataArray{{MetadataArray{{int64_t{1}}}}, {MetadataArray{}}}};
    for (uint64_t align : {32u, 64u}) {
        std::string path = test::temp_path("rt.gguf");
        write_gguf(path, {out_of("a", a), out_of("q", q), out_of("s", s)}, meta, align);
        TensorFile f = open_tensor_file(path);
        EXPECT_EQ(f.format, "gguf");
        ASSERT_EQ(f.tensors.size(), 3u);
        EXPECT_EQ(f.tensors[1].name, "q");
        EXPECT_EQ(f.find("a")->shape, a.shape());
        EXPECT_EQ(f.find("a")->load().to_vector(), a.to_vector());
        Tensor rq = f.find("q")->load();
        EXPECT_EQ(rq.dtype(), DType::Q8_0);
        EXPECT_EQ(rq.shape(), (Shape{2, 64}));
        EXPECT_EQ(std::memcmp(rq.data_ptr(), q.data_ptr(), q.nbytes()), 0);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(rq.data_ptr()) % align, 0u);
        EXPECT_EQ(std::get<std::string>(f.metadata.at("general.name").value), "test model");
        EXPECT_EQ(std::get<uint64_t>(f.metadata.at("u").value), 7u);
        EXPECT_EQ(std::get<uint64_t>(f.metadata.at("big").value), uint64_t{1} << 40);
        EXPECT_EQ(std::get<int64_t>(f.metadata.at("i").value), -3);
        EXPECT_EQ(std::get<double>(f.metadata.at("f").value), 0.5);
        EXPECT_EQ(std::get<bool>(f.metadata.at("b").value), true);
        EXPECT_EQ(std::get<MetadataArray>(f.metadata.at("tokens").value).size(), 2u);
        EXPECT_EQ(std::get<MetadataArray>(f.metadata.at("nested").value).size(), 2u);
        std::remove(path.c_str());
    }
}

// Builds GGUF bytes by hand for the hostile cases.
struct GgufBuilder {
    std::string bytes;
    template <class T>
    GgufBuilder& v(T x) {
        bytes.append(reinterpret_cast<const char*>(&x), sizeof(T));
        return *this;
    }
    GgufBuilder& str(const std::string& s) {
        v<uint64_t>(s.size());
        bytes += s;
        return *this;
    }
    GgufBuilder& header(uint32_t version, uint64_t tensors, uint64_t kvs) {
        bytes = "GGUF";
        return v(version).v(tensors).v(kvs);
    }
    // One f32 tensor info: dims innermost first.
    GgufBuilder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                        uint64_t offset) {
        str(name).v<uint32_t>(static_cast<uint32_t>(ne.size()));
        for (uint64_t d : ne) v(d);
        return v(type).v(offset);
    }
    GgufBuilder& pad(size_t align = 32) {
        bytes.append((align - bytes.size() % align) % align, '\0');
        return *this;
    }
    GgufBuilder& data(size_t n) {
        bytes.append(n, '\x01');
        return *this;
    }
};

TEST(Gguf, HostileFilesGiveErrorsNamingTheProblem) {
    struct Case {
        const char* name;
        std::string bytes;
        const char* message;
    };
    std::vector<Case> cases = {
        {"short", "GGUF", "truncated"},
        {"v1", GgufBuilder().header(1, 0, 0).bytes, "version 1"},
        {"counts", GgufBuilder().header(3, 1ull << 60, 0).bytes, "more than the file"},
        {"long_key", GgufBuilder().header(3, 0, 1).v<uint64_t>(1ull << 62).data(20).bytes,
         "remain"},
        {"long_string",
         GgufBuilder().header(3, 0, 1).str("k").v<uint32_t>(8).v<uint64_t>(999999).bytes, "remain"},
        {"bad_type", GgufBuilder().header(3, 0, 1).str("k").v<uint32_t>(99).bytes,
         "unknown value type"},
        {"bad_bool", GgufBuilder().header(3, 0, 1).str("k").v<uint32_t>(7).v<uint8_t>(5).bytes,
         "bool value"},
        {"long_array",
         GgufBuilder()
             .header(3, 0, 1)
             .str("k")
             .v<uint32_t>(9)
             .v<uint32_t>(4)
             .v<uint64_t>(1ull << 40)
             .bytes,
         "longer than the file"},
        // 100 u64 values claimed, 100 bytes left: fits one byte a value, not eight (found
        // by fuzz_gguf: the array was reserved before any value was read).
        {"array_count_lie",
         GgufBuilder()
             .header(3, 0, 1)
             .str("k")
             .v<uint32_t>(9)
             .v<uint32_t>(10)
             .v<uint64_t>(100)
             .data(100)
             .bytes,
         "longer than the file"},
        {"dup_key",
         GgufBuilder()
             .header(3, 0, 2)
             .str("k")
             .v<uint32_t>(4)
             .v<uint32_t>(1)
             .str("k")
             .v<uint32_t>(4)
             .v<uint32_t>(1)
             .bytes,
         "twice"},
        {"bad_align",
         GgufBuilder().header(3, 0, 1).str("general.alignment").v<uint32_t>(4).v<uint32_t>(3).bytes,
         "power of two"},
        {"unknown_dtype",
         GgufBuilder().header(3, 1, 0).tensor("t", {4}, 77, 0).pad().data(16).bytes,
         "GGUF type 77"},
        {"zero_dims", GgufBuilder().header(3, 1, 0).tensor("t", {}, 0, 0).pad().data(16).bytes,
         "0 dimensions"},
        {"partial_block",
         GgufBuilder().header(3, 1, 0).tensor("t", {16}, 8, 0).pad().data(64).bytes,
         "not a multiple of 32"},
        {"past_end", GgufBuilder().header(3, 1, 0).tensor("t", {64}, 0, 0).pad().data(16).bytes,
         "past the end"},
        {"huge_dims",
         GgufBuilder()
             .header(3, 1, 0)
             .tensor("t", {1ull << 40, 1ull << 40}, 0, 0)
             .pad()
             .data(16)
             .bytes,
         "too large"},
        {"misaligned", GgufBuilder().header(3, 1, 0).tensor("t", {2}, 0, 4).pad().data(64).bytes,
         "not a multiple of the alignment"},
        {"overlap",
         GgufBuilder()
             .header(3, 2, 0)
             .tensor("a", {16}, 0, 0)
             .tensor("b", {16}, 0, 32)
             .pad()
             .data(128)
             .bytes,
         "overlap"},
        {"dup_tensor",
         GgufBuilder()
             .header(3, 2, 0)
             .tensor("a", {4}, 0, 0)
             .tensor("a", {4}, 0, 32)
             .pad()
             .data(64)
             .bytes,
         "twice"},
    };
    for (const Case& c : cases) {
        std::string path = write_temp(std::string("hostile_") + c.name + ".gguf", c.bytes);
        std::string msg = error_of([&] { read_gguf(path); });
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
        EXPECT_NE(msg.find(path), std::string::npos)
            << c.name << " does not name the file: " << msg;
        std::remove(path.c_str());
    }
    // Every truncation of a valid file is an error, never a crash.
    Tensor a = test::random_tensor({2, 32}, 3);
    std::string path = test::temp_path("trunc.gguf");
    write_gguf(path, {out_of("a", a)}, {{"k", {std::string("value")}}});
    std::ifstream in(path, std::ios::binary);
    std::string full((std::istreambuf_iterator<char>(in)), {});
    for (size_t n = 0; n < full.size(); n += 3) {
        std::string p = write_temp("trunc_part.gguf", full.substr(0, n));
        EXPECT_THROW(read_gguf(p), Error) << n;
    }
}

}  // namespace
}  // namespace sd
