#include <gtest/gtest.h>

#include <cstring>

#include "io/tensor_file.h"
#include "io/tensor_writer.h"
#include "io_test_util.h"
#include "test_util.h"

namespace sd {
namespace {

using test::error_of;
using test::le64;
using test::write_temp;

OutputTensor out_of(const std::string& name, const Tensor& t) {
    return {name, t.dtype(), t.shape(), [t] { return t; }};
}

std::string safetensors_bytes(const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
}

TEST(Safetensors, WriteThenReadRoundTrip) {
    Tensor a = test::random_tensor({3, 5}, 1);
    Tensor b = Tensor::empty({7}, DType::F16);
    for (int i = 0; i < 7; ++i) b.data<uint16_t>()[i] = static_cast<uint16_t>(0x3c00 + i);
    Tensor c = Tensor::empty({2, 2}, DType::I32);
    for (int i = 0; i < 4; ++i) c.data<int32_t>()[i] = -i;
    std::string path = test::temp_path("rt.safetensors");
    write_safetensors(path, {out_of("a.weight", a), out_of("b", b), out_of("c", c)},
                      {{"format", "pt"}});
    TensorFile f = open_tensor_file(path);
    EXPECT_EQ(f.format, "safetensors");
    ASSERT_EQ(f.tensors.size(), 3u);
    EXPECT_EQ(f.tensors[0].name, "a.weight");
    EXPECT_EQ(f.metadata.at("format").to_string(), "\"pt\"");
    Tensor ra = f.find("a.weight")->load();
    EXPECT_EQ(ra.shape(), a.shape());
    EXPECT_EQ(ra.to_vector(), a.to_vector());
    // Views the mapping, no copy.
    EXPECT_FALSE(ra.storage()->writable());
    Tensor rb = f.find("b")->load();
    EXPECT_EQ(rb.dtype(), DType::F16);
    EXPECT_EQ(std::memcmp(rb.data_ptr(), b.data_ptr(), 14), 0);
    EXPECT_EQ(f.find("c")->load().to_vector(), c.to_vector());
    std::remove(path.c_str());
}

TEST(Safetensors, ConvertsFileOnlyTypesOnLoad) {
    std::string header = R"({"pos":{"dtype":"I64","shape":[3],"data_offsets":[0,24]},)"
                         R"("d":{"dtype":"F64","shape":[1],"data_offsets":[24,32]},)"
                         R"("f8":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[32,34]}})";
    int64_t pos[3] = {0, 1, -5};
    double d = 0.25;
    uint8_t f8[2] = {0x38, 0xb8};  // 1.0, -1.0 in e4m3
    std::string data(reinterpret_cast<char*>(pos), 24);
    data +=
        std::string(reinterpret_cast<char*>(&d), 8) + std::string(reinterpret_cast<char*>(f8), 2);
    TensorFile f = read_safetensors(write_temp("raw.safetensors", safetensors_bytes(header, data)));
    EXPECT_EQ(f.find("pos")->load().to_vector(), (std::vector<float>{0, 1, -5}));
    EXPECT_EQ(f.find("pos")->dtype, DType::I32);
    EXPECT_EQ(f.find("d")->load().to_vector(), (std::vector<float>{0.25f}));
    EXPECT_EQ(f.find("f8")->load().to_vector(), (std::vector<float>{1.0f, -1.0f}));
}

TEST(Safetensors, MisalignedDataIsCopiedOnLoad) {
    std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
    float v[2] = {1.5f, -2.0f};
    std::string data(1, 'z');
    data.append(reinterpret_cast<const char*>(v), 8);
    std::string bytes = le64(header.size()) + header + data;
    TensorFile f = read_safetensors(write_temp("mis.safetensors", bytes));
    EXPECT_EQ(f.find("x")->load().to_vector(), (std::vector<float>{1.5f, -2.0f}));
}

struct HostileCase {
    const char* name;
    std::string bytes;
    const char* message;
};

TEST(Safetensors, HostileFilesGiveErrorsNamingTheProblem) {
    std::string ok_entry = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
    std::string data8(8, '\0');
    std::vector<HostileCase> cases = {
        {"empty", "", "too short"},
        {"len_past_end", le64(1000) + "{}", "runs past the end"},
        {"len_huge", le64(~0ull) + "{}", "runs past the end"},
        {"not_json", safetensors_bytes("{nope", ""), "malformed"},
        {"not_object", safetensors_bytes("[1,2]", ""), "not a JSON object"},
        {"deep", safetensors_bytes(std::string(5000, '[') + std::string(5000, ']'), ""),
         "nested deeper"},
        {"dup", safetensors_bytes("{" + ok_entry + "," + ok_entry + "}", data8), "appears twice"},
        {"unknown_dtype",
         safetensors_bytes(R"({"t":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}})", data8),
         "unknown dtype"},
        {"missing_field", safetensors_bytes(R"({"t":{"dtype":"F32","shape":[2]}})", data8),
         "lacks"},
        {"offset_oob",
         safetensors_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,80]}})", data8),
         "outside"},
        {"offset_reversed",
         safetensors_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data8),
         "outside"},
        {"size_mismatch",
         safetensors_bytes(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8),
         "needs 12 bytes"},
        {"overflow",
         safetensors_bytes(
             R"({"t":{"dtype":"F32","shape":[1099511627776,1099511627776,1099511627776],"data_offsets":[0,8]}})",
             data8),
         "needs"},
        {"too_big_dim",
         safetensors_bytes(
             R"({"t":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,8]}})", data8),
         "too large"},
        {"neg_dim",
         safetensors_bytes(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8),
         "non-negative"},
        {"overlap",
         safetensors_bytes(
             R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             data8),
         "overlap"},
        {"bad_utf8",
         safetensors_bytes(
             "{\"\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", data8),
         "malformed"},
        {"meta_not_string", safetensors_bytes(R"({"__metadata__":{"a":1}})", ""), "not a string"},
        {"too_many_dims",
         safetensors_bytes(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,2],"data_offsets":[0,8]}})",
                           data8),
         "dimensions"},
        {"empty_name",
         safetensors_bytes(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data8),
         "empty name"},
    };
    for (const HostileCase& c : cases) {
        std::string path = write_temp(std::string("hostile_") + c.name + ".safetensors", c.bytes);
        std::string msg = error_of([&] { read_safetensors(path); });
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
        EXPECT_NE(msg.find(path), std::string::npos)
            << c.name << " does not name the file: " << msg;
        std::remove(path.c_str());
    }
}

TEST(Safetensors, ShardedIndexMergesShards) {
    Tensor a = test::random_tensor({4}, 2), b = test::random_tensor({2, 3}, 3);
    std::string dir = testing::TempDir();
    std::string s1 = test::temp_path("model-00001-of-00002.safetensors");
    std::string s2 = test::temp_path("model-00002-of-00002.safetensors");
    write_safetensors(s1, {out_of("a", a)});
    write_safetensors(s2, {out_of("b", b)});
    auto base = [](const std::string& p) { return p.substr(p.find_last_of('/') + 1); };
    std::string index =
        R"({"metadata":{},"weight_map":{"a":")" + base(s1) + R"(","b":")" + base(s2) + R"("}})";
    std::string ipath = write_temp("model.safetensors.index.json", index);
    TensorFile f = open_tensor_file(ipath);
    ASSERT_EQ(f.tensors.size(), 2u);
    EXPECT_EQ(f.find("b")->load().to_vector(), b.to_vector());

    std::string bad =
        write_temp("bad.safetensors.index.json", R"({"weight_map":{"a":"../etc/passwd"}})");
    EXPECT_ERROR_CONTAINS(open_tensor_file(bad), "plain file name");
    std::string missing = write_temp("missing.safetensors.index.json",
                                     R"({"weight_map":{"zz":")" + base(s1) + R"("}})");
    EXPECT_ERROR_CONTAINS(open_tensor_file(missing), "not found there");
}

TEST(Safetensors, WriterRejectsWhatItCannotHold) {
    std::string path = test::temp_path("q.safetensors");
    Tensor q = Tensor::zeros({2, 32}, DType::Q8_0);
    EXPECT_ERROR_CONTAINS(write_safetensors(path, {out_of("q", q)}), "cannot hold q8_0");
    Tensor a = test::random_tensor({2}, 1);
    EXPECT_ERROR_CONTAINS(write_safetensors(path, {out_of("a", a), out_of("a", a)}), "given twice");
    // A producer that fails midway leaves no file behind.
    OutputTensor bad{"x", DType::F32, {2}, [] { return Tensor::zeros({3}); }};
    EXPECT_ERROR_CONTAINS(write_safetensors(path, {bad}), "came out as");
    EXPECT_FALSE(std::ifstream(path).good());
    EXPECT_FALSE(std::ifstream(path + ".part").good());
}

TEST(TensorFile, UnknownContentIsNamed) {
    std::string path = write_temp("junk.bin", "this is not a model file at all");
    EXPECT_ERROR_CONTAINS(open_tensor_file(path), "not a model file");
    EXPECT_ERROR_CONTAINS(open_tensor_file("/nonexistent.safetensors"), "cannot open");
}

}  // namespace
}  // namespace sd
