#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "io/tensor_file.h"
#include "io/zip_reader.h"
#include "io_test_util.h"

namespace sd {
namespace {

using test::error_of;
using test::temp_path;
using test::write_temp;
using namespace std::string_literals;

// ---- the python helper ----------------------------------------------------------------------

std::string source_dir() {
    std::string file = __FILE__;
    return file.substr(0, file.find_last_of('/'));
}

// Runs a python script with /usr/bin/python3; fails the test with what to do when numpy is
// missing or the command fails.
void run_python(const std::string& args) {
    if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
        FAIL() << "/usr/bin/python3 with numpy is needed (python3-numpy is missing): run "
                  "scripts/install-deps.sh";
    }
    std::string cmd = "/usr/bin/python3 " + args;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "command failed: " << cmd;
}

void write_checkpoint(const std::string& in, const std::string& out, const std::string& options) {
    run_python(source_dir() + "/write_torch_checkpoint.py '" + in + "' '" + out + "' " + options);
}

// ---- safetensors files with any dtype ----------------------------------------------------------

struct RawTensor {
    std::string name;
    std::string dtype;  // safetensors name
    std::vector<int64_t> shape;
    std::string bytes;
};

template <class T>
RawTensor raw(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
              std::vector<T> values) {
    return {name, dtype, std::move(shape),
            std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T))};
}

std::string safetensors_bytes(const std::vector<RawTensor>& tensors) {
    std::string header = "{", data;
    for (const RawTensor& t : tensors) {
        if (header.size() > 1) header += ",";
        header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
        for (size_t i = 0; i < t.shape.size(); ++i) {
            if (i > 0) header += ",";
            header += std::to_string(t.shape[i]);
        }
        header += "],\"data_offsets\":[" + std::to_string(data.size()) + ",";
        header += std::to_string(data.size() + t.bytes.size()) + "]}";
        data += t.bytes;
    }
    header += "}";
    return test::le64(header.size()) + header + data;
}

std::vector<RawTensor> every_dtype() {
    std::vector<float> f(12);
    for (int i = 0; i < 12; ++i) f[i] = 0.5f * static_cast<float>(i) - 2.0f;
    std::vector<uint16_t> h(24), bf(6);
    for (int i = 0; i < 24; ++i) h[i] = static_cast<uint16_t>(0x3c00 + 37 * i);
    for (int i = 0; i < 6; ++i) bf[i] = static_cast<uint16_t>(0x3f80 + 3 * i);
    std::vector<float> five(12);
    for (int i = 0; i < 12; ++i) five[i] = static_cast<float>(i * i);
    return {
        raw("model.w", "F32", {3, 4}, f),
        raw("model.h", "F16", {2, 3, 4}, h),
        raw("model.bf", "BF16", {2, 3}, bf),
        raw("d", "F64", {2}, std::vector<double>{0.25, -1.5}),
        raw("i64", "I64", {3}, std::vector<int64_t>{1, -2, int64_t{1} << 40}),
        raw("i32", "I32", {1, 2}, std::vector<int32_t>{7, -8}),
        raw("i16", "I16", {1}, std::vector<int16_t>{-3}),
        raw("i8", "I8", {2}, std::vector<int8_t>{-4, 5}),
        raw("u8", "U8", {2}, std::vector<uint8_t>{250, 1}),
        raw("flag", "BOOL", {3}, std::vector<uint8_t>{1, 0, 1}),
        raw("scalar", "F32", {}, std::vector<float>{3.5f}),
        raw("empty", "F32", {0, 3}, std::vector<float>{}),
        raw("f8", "F8_E4M3", {2}, std::vector<uint8_t>{0x38, 0xb8}),
        raw("five.dims", "F32", {2, 1, 3, 1, 2}, five),
    };
}

void expect_same_tensors(const TensorFile& source, const TensorFile& ckpt) {
    ASSERT_EQ(ckpt.tensors.size(), source.tensors.size());
    for (const TensorRecord& want : source.tensors) {
        const TensorRecord* got = ckpt.find(want.name);
        ASSERT_NE(got, nullptr) << want.name;
        EXPECT_EQ(got->shape, want.shape) << want.name;
        EXPECT_EQ(got->dtype, want.dtype) << want.name;
        EXPECT_EQ(got->raw, want.raw) << want.name;
        EXPECT_FALSE(got->storage->writable()) << want.name << " is not a view of the file";
        Tensor a = want.load(), b = got->load();
        if (want.raw == RawType::None && want.strides == got->strides) {
            EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << want.name;
        } else {
            EXPECT_EQ(a.to_vector(), b.to_vector()) << want.name;
        }
    }
}

TEST(TorchCheckpoint, RoundTripThroughTheHelperInEveryLayout) {
    const std::string src = write_temp("every.safetensors", safetensors_bytes(every_dtype()));
    const TensorFile source = read_safetensors(src);
    const char* layouts[] = {"",
                             "--state-dict",
                             "--strided --shared",
                             "--nest --parameters",
                             "--protocol 4 --strided --shared --state-dict",
                             "--protocol 5 --nest --folder model"};
    for (const char* options : layouts) {
        SCOPED_TRACE(options);
        const std::string out = temp_path("every.ckpt");
        ASSERT_NO_FATAL_FAILURE(write_checkpoint(src, out, options));
        TensorFile ckpt = open_tensor_file(out);
        EXPECT_EQ(ckpt.format, "ckpt");
        expect_same_tensors(source, ckpt);
        const bool strided = std::strstr(options, "--strided");
        const TensorRecord& w = *ckpt.find("model.w");
        EXPECT_EQ(w.strides != contiguous_strides(w.shape), strided);
        if (std::strstr(options, "--shared")) {
            EXPECT_EQ(ckpt.find("model.w")->storage, ckpt.find("five.dims")->storage);
            EXPECT_EQ(ckpt.find("five.dims")->offset, 13);  // after model.w, scalar, empty
        }
        if (std::strstr(options, "--state-dict")) {
            EXPECT_EQ(ckpt.metadata.at("global_step").to_string(), "840000");
        }
        std::remove(out.c_str());
    }
}

TEST(TorchCheckpoint, RoundTripOfAFixtureCheckpoint) {
    const std::string src = temp_path("taesd.safetensors"), out = temp_path("taesd.ckpt");
    ASSERT_NO_FATAL_FAILURE(run_python(std::string(SD_FIXTURES_DIR) + "/mkckpt.py " +
                                       SD_FIXTURES_DIR + "/manifests/taesd.tsv '" + src +
                                       "' --dtype f16 --seed 5"));
    ASSERT_NO_FATAL_FAILURE(write_checkpoint(src, out, "--state-dict"));
    const TensorFile source = read_safetensors(src);
    const TensorFile ckpt = read_torch_checkpoint(out);
    EXPECT_EQ(ckpt.tensors.size(), 134u);
    expect_same_tensors(source, ckpt);
    // Same order as the source file.
    for (size_t i = 0; i < ckpt.tensors.size(); ++i) {
        EXPECT_EQ(ckpt.tensors[i].name, source.tensors[i].name);
    }
    std::remove(src.c_str());
    std::remove(out.c_str());
}

// ---- a checkpoint written by torch itself ----------------------------------------------------

// torch 1.13 torch.save(..., "t.ckpt") of
//   base = torch.arange(12.).reshape(3, 4)
//   inner = OrderedDict(w=base, wt=base.t(), row=base[1],
//                       h=tensor([1.5, -2.0], float16), bf=tensor([1., 2., 3.], bfloat16),
//                       d=tensor([0.25], float64), i=tensor([1, -2]), b=tensor([True, False]),
//                       u8=tensor([7], uint8), i32=tensor([[5]], int32),
//                       nested={"x": torch.ones(2)}, param=nn.Parameter(tensor([3.])), step=5)
//   {"state_dict": inner, "global_step": 42, "name": "tiny"}
const char* kTorchCheckpointHex =
    "504b0304000008080000000000000000000000000000000000000a001800742f646174612e706b6c46421400"
    "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a80027d710028580a00000073746174655f64696374710163"
    "636f6c6c656374696f6e730a4f726465726564446963740a71022952710328580100000077710463746f7263"
    "682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71052828580700000073746f72616765"
    "710663746f7263680a466c6f617453746f726167650a71075801000000307108580300000063707571094b0c"
    "74710a514b004b034b0486710b4b044b0186710c8968022952710d74710e52710f5802000000777471106805"
    "282868066807680868094b0c747111514b004b044b038671124b014b04867113896802295271147471155271"
    "165803000000726f7771176805282868066807680868094b0c747118514b044b048571194b0185711a896802"
    "2952711b74711c52711d580100000068711e68052828680663746f7263680a48616c6653746f726167650a71"
    "1f580100000031712068094b02747121514b004b028571224b01857123896802295271247471255271265802"
    "0000006266712768052828680663746f7263680a42466c6f6174313653746f726167650a7128580100000032"
    "712968094b0374712a514b004b0385712b4b0185712c8968022952712d74712e52712f580100000064713068"
    "052828680663746f7263680a446f75626c6553746f726167650a7131580100000033713268094b0174713351"
    "4b004b018571344b0185713589680229527136747137527138580100000069713968052828680663746f7263"
    "680a4c6f6e6753746f726167650a713a580100000034713b68094b0274713c514b004b0285713d4b0185713e"
    "8968022952713f747140527141580100000062714268052828680663746f7263680a426f6f6c53746f726167"
    "650a7143580100000035714468094b02747145514b004b028571464b01857147896802295271487471495271"
    "4a58020000007538714b68052828680663746f7263680a4279746553746f726167650a714c58010000003671"
    "4d68094b0174714e514b004b0185714f4b018571508968022952715174715252715358030000006933327154"
    "68052828680663746f7263680a496e7453746f726167650a7155580100000037715668094b01747157514b00"
    "4b014b018671584b014b018671598968022952715a74715b52715c58060000006e6573746564715d7d715e58"
    "0100000078715f6805282868066807580100000038716068094b02747161514b004b028571624b0185716389"
    "680229527164747165527166735805000000706172616d716763746f7263682e5f7574696c730a5f72656275"
    "696c645f706172616d657465720a71686805282868066807580100000039716968094b0174716a514b004b01"
    "85716b4b0185716c8968022952716d74716e52716f8868022952717087717152717258040000007374657071"
    "734b05757d717458090000005f6d657461646174617175680229527176580000000071777d71785807000000"
    "76657273696f6e71794b0173737362580b000000676c6f62616c5f73746570717a4b2a58040000006e616d65"
    "717b580400000074696e79717c752e504b0708108c48e47304000073040000504b0304000008080000000000"
    "0000000000000000000000000008001700742f646174612f30464213005a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
    "5a5a5a5a000000000000803f0000004000004040000080400000a0400000c0400000e0400000004100001041"
    "0000204100003041504b0708787d663e3000000030000000504b030400000808000000000000000000000000"
    "00000000000008001a00742f646174612f31464216005a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
    "003e00c0504b070836d5d5940400000004000000504b03040000080800000000000000000000000000000000"
    "000008000600742f646174612f32464202005a5a803f00404040504b070879193c7a0600000006000000504b"
    "03040000080800000000000000000000000000000000000008000400742f646174612f334642000000000000"
    "0000d03f504b07084b377c520800000008000000504b03040000080800000000000000000000000000000000"
    "000008004200742f646174612f3446423e005a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
    "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a0100000000000000"
    "feffffffffffffff504b07082fda1fca1000000010000000504b030400000808000000000000000000000000"
    "00000000000008003a00742f646174612f35464236005a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
    "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a0100504b0708be23c2580200"
    "000002000000504b03040000080800000000000000000000000000000000000008000800742f646174612f36"
    "464204005a5a5a5a07504b07082e7a664c0100000001000000504b0304000008080000000000000000000000"
    "0000000000000008000900742f646174612f37464205005a5a5a5a5a05000000504b07082e2f9a1604000000"
    "04000000504b03040000080800000000000000000000000000000000000008000600742f646174612f384642"
    "02005a5a0000803f0000803f504b0708905106d50800000008000000504b0304000008080000000000000000"
    "0000000000000000000008004200742f646174612f3946423e005a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
    "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
    "00004040504b070889d1e1a70400000004000000504b03040000080800000000000000000000000000000000"
    "000009000500742f76657273696f6e464201005a330a504b0708d19e67550200000002000000504b01020000"
    "00000808000000000000108c48e473040000730400000a0000000000000000000000000000000000742f6461"
    "74612e706b6c504b0102000000000808000000000000787d663e300000003000000008000000000000000000"
    "00000000c3040000742f646174612f30504b010200000000080800000000000036d5d5940400000004000000"
    "080000000000000000000000000040050000742f646174612f31504b01020000000008080000000000007919"
    "3c7a0600000006000000080000000000000000000000000094050000742f646174612f32504b010200000000"
    "08080000000000004b377c5208000000080000000800000000000000000000000000d6050000742f64617461"
    "2f33504b01020000000008080000000000002fda1fca10000000100000000800000000000000000000000000"
    "18060000742f646174612f34504b0102000000000808000000000000be23c258020000000200000008000000"
    "00000000000000000000a0060000742f646174612f35504b01020000000008080000000000002e7a664c0100"
    "000001000000080000000000000000000000000012070000742f646174612f36504b01020000000008080000"
    "000000002e2f9a160400000004000000080000000000000000000000000051070000742f646174612f37504b"
    "0102000000000808000000000000905106d50800000008000000080000000000000000000000000094070000"
    "742f646174612f38504b010200000000080800000000000089d1e1a704000000040000000800000000000000"
    "000000000000d8070000742f646174612f39504b0102000000000808000000000000d19e6755020000000200"
    "0000090000000000000000000000000054080000742f76657273696f6e504b06062c000000000000001e032d"
    "0000000000000000000c000000000000000c000000000000008b020000000000009208000000000000504b06"
    "07000000001d0b00000000000001000000504b0506000000000c000c008b020000920800000000";

std::string torch_checkpoint_bytes() {
    std::string hex = kTorchCheckpointHex, out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    return out;
}

TEST(TorchCheckpoint, ReadsACheckpointWrittenByTorch) {
    const std::string path = write_temp("t.ckpt", torch_checkpoint_bytes());
    TensorFile f = open_tensor_file(path);
    EXPECT_EQ(f.format, "ckpt");
    std::vector<std::string> names;
    for (const TensorRecord& r : f.tensors) names.push_back(r.name);
    EXPECT_EQ(names, (std::vector<std::string>{"w", "wt", "row", "h", "bf", "d", "i", "b", "u8",
                                               "i32", "nested.x", "param"}));
    EXPECT_EQ(f.metadata.at("global_step").to_string(), "42");
    EXPECT_EQ(f.metadata.at("name").to_string(), "\"tiny\"");

    std::vector<float> base(12);
    for (int i = 0; i < 12; ++i) base[i] = static_cast<float>(i);
    EXPECT_EQ(f.find("w")->load().to_vector(), base);
    // wt and row view w's storage: transposed, and a row at an offset.
    const TensorRecord& wt = *f.find("wt");
    EXPECT_EQ(wt.storage, f.find("w")->storage);
    EXPECT_EQ(wt.shape, Shape({4, 3}));
    EXPECT_EQ(wt.strides, Shape({1, 4}));
    EXPECT_EQ(wt.load().to_vector(), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
    EXPECT_EQ(f.find("row")->offset, 4);
    EXPECT_EQ(f.find("row")->load().to_vector(), (std::vector<float>{4, 5, 6, 7}));
    EXPECT_EQ(f.find("h")->dtype, DType::F16);
    EXPECT_EQ(f.find("h")->load().to_vector(), (std::vector<float>{1.5f, -2.0f}));
    EXPECT_EQ(f.find("bf")->dtype, DType::BF16);
    EXPECT_EQ(f.find("bf")->load().to_vector(), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(f.find("d")->raw, RawType::F64);
    EXPECT_EQ(f.find("d")->load().to_vector(), (std::vector<float>{0.25f}));
    EXPECT_EQ(f.find("i")->load().to_vector(), (std::vector<float>{1, -2}));
    EXPECT_EQ(f.find("b")->load().to_vector(), (std::vector<float>{1, 0}));
    EXPECT_EQ(f.find("u8")->load().to_vector(), (std::vector<float>{7}));
    EXPECT_EQ(f.find("i32")->dtype, DType::I32);
    EXPECT_EQ(f.find("i32")->load().to_vector(), (std::vector<float>{5}));
    EXPECT_EQ(f.find("nested.x")->load().to_vector(), (std::vector<float>{1, 1}));
    EXPECT_EQ(f.find("param")->load().to_vector(), (std::vector<float>{3}));
}

TEST(TorchCheckpoint, EveryTruncationAndCorruptionFailsCleanly) {
    const std::string good = torch_checkpoint_bytes();
    const std::string path = temp_path("cut.ckpt");
    for (size_t n = 0; n < good.size(); ++n) {
        write_temp("cut.ckpt", good.substr(0, n));
        std::string msg = error_of([&] { read_torch_checkpoint(path); });
        EXPECT_NE(msg.find(path), std::string::npos) << n << ": " << msg;
    }
    // Corrupted bytes either read (then every tensor loads) or give an sd::Error.
    std::mt19937 gen(3);
    for (int i = 0; i < 800; ++i) {
        std::string bad = good;
        for (int k = 0; k < 2; ++k) bad[gen() % bad.size()] = static_cast<char>(gen());
        write_temp("cut.ckpt", bad);
        try {
            for (const TensorRecord& r : read_torch_checkpoint(path).tensors) r.load().to_vector();
        } catch (const Error&) {
        }
    }
    std::remove(path.c_str());
}

// ---- hostile checkpoints made by hand ----------------------------------------------------------

void put16(std::string& s, uint16_t v) {
    s.append(reinterpret_cast<const char*>(&v), 2);
}
void put32(std::string& s, uint32_t v) {
    s.append(reinterpret_cast<const char*>(&v), 4);
}

// A stored zip of (name, bytes) entries.
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries,
                     uint16_t method = 0) {
    std::string s, dir;
    for (const auto& [name, data] : entries) {
        const uint32_t crc =
            zip_crc32({reinterpret_cast<const uint8_t*>(data.data()), data.size()});
        const uint32_t offset = static_cast<uint32_t>(s.size());
        for (std::string* out : {&s, &dir}) {
            const bool central = out == &dir;
            put32(*out, central ? 0x02014b50 : 0x04034b50);
            if (central) put16(*out, 20);
            put16(*out, 20);
            put16(*out, 0);
            put16(*out, method);
            put32(*out, 0);
            put32(*out, crc);
            put32(*out, static_cast<uint32_t>(data.size()));
            put32(*out, static_cast<uint32_t>(data.size()));
            put16(*out, static_cast<uint16_t>(name.size()));
            put16(*out, 0);
            if (central) {
                put32(*out, 0);
                put16(*out, 0);
                put32(*out, 0);
                put32(*out, offset);
            }
            *out += name;
        }
        s += data;
    }
    const uint32_t dir_offset = static_cast<uint32_t>(s.size());
    s += dir;
    put32(s, 0x06054b50);
    put32(s, 0);
    put16(s, static_cast<uint16_t>(entries.size()));
    put16(s, static_cast<uint16_t>(entries.size()));
    put32(s, static_cast<uint32_t>(dir.size()));
    put32(s, dir_offset);
    put16(s, 0);
    return s;
}

// Protocol-2 pickles as torch writes them.
struct Pickler {
    std::string s = "\x80\x02"s;

    Pickler& op(char c) {
        s += c;
        return *this;
    }
    Pickler& str(const std::string& v) {
        s += 'X';
        put32(s, static_cast<uint32_t>(v.size()));
        s += v;
        return *this;
    }
    Pickler& integer(int64_t v) {
        s += '\x8a';
        s += '\x08';
        s.append(reinterpret_cast<const char*>(&v), 8);
        return *this;
    }
    Pickler& global(const std::string& module, const std::string& name) {
        s += "c" + module + "\n" + name + "\n";
        return *this;
    }
    Pickler& ints(const std::vector<int64_t>& v) {
        op('(');
        for (int64_t i : v) integer(i);
        return op('t');
    }
    // _rebuild_tensor_v2(('storage', torch.TYPE, key, 'cpu', numel), offset, size, stride, ...)
    Pickler& tensor(const std::string& type, const std::string& key, int64_t numel, int64_t offset,
                    const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
        global("torch._utils", "_rebuild_tensor_v2").op('(');
        op('(').str("storage").global("torch", type).str(key).str("cpu").integer(numel).op('t');
        op('Q').integer(offset).ints(size).ints(stride).op('\x89');
        global("collections", "OrderedDict").op(')').op('R');
        return op('t').op('R');
    }
    std::string done() { return s + "."; }
};

std::string float_bytes(int n) {
    return std::string(static_cast<size_t>(n) * 4, '\0');
}

// {"w": tensor} with a float storage "0" of `numel` elements in a `bytes`-byte entry.
std::string one_tensor(int64_t numel, int64_t offset, std::vector<int64_t> size,
                       std::vector<int64_t> stride, int bytes = 48) {
    Pickler p;
    p.op('}').op('(').str("w").tensor("FloatStorage", "0", numel, offset, size, stride).op('u');
    return make_zip({{"archive/data.pkl", p.done()}, {"archive/data/0", float_bytes(bytes / 4)}});
}

struct BadCheckpoint {
    const char* name;
    std::string bytes;
    const char* message;
};

std::vector<BadCheckpoint> hostile_checkpoints() {
    Pickler two_names;
    two_names.op('}').op('(');
    two_names.str("a").tensor("FloatStorage", "0", 12, 0, {12}, {1});
    two_names.str("a").tensor("FloatStorage", "0", 12, 0, {12}, {1}).op('u');
    Pickler nested_clash;
    nested_clash.op('}').op('(').str("a.b").tensor("FloatStorage", "0", 12, 0, {12}, {1});
    nested_clash.str("a").op('}').str("b").tensor("FloatStorage", "0", 12, 0, {12}, {1}).op('s');
    nested_clash.op('u');
    Pickler retyped;
    retyped.op('}').op('(').str("a").tensor("FloatStorage", "0", 12, 0, {12}, {1});
    retyped.str("b").tensor("HalfStorage", "0", 24, 0, {24}, {1}).op('u');
    Pickler cycle;  // d = {}; d["d"] = d
    cycle.op('}').op('q').op('\0').str("d").op('h').op('\0').op('s');
    Pickler evil;
    evil.global("os", "system").str("echo owned").op('\x85').op('R');
    auto with_data = [](const std::string& pkl) {
        return make_zip({{"archive/data.pkl", pkl}, {"archive/data/0", float_bytes(12)}});
    };
    const std::string ok = one_tensor(12, 0, {3, 4}, {4, 1});
    std::string bad_crc = ok;
    bad_crc[30 + 16 + 5] ^= 0x20;  // inside data.pkl
    return {
        {"big_endian",
         make_zip({{"archive/data.pkl", "\x80\x02}."s}, {"archive/byteorder", "big"}}),
         "saved on a big-endian machine"},
        {"odd_byteorder",
         make_zip({{"archive/data.pkl", "\x80\x02}."s}, {"archive/byteorder", "middle"}}),
         "unknown byteorder"},
        {"no_pickle", make_zip({{"archive/version", "3\n"}}), "has no 'archive/data.pkl'"},
        {"torchscript", make_zip({{"m/constants.pkl", "x"}, {"m/code/x.py", "y"}}), "TorchScript"},
        {"no_folder", make_zip({{"data.pkl", "\x80\x02}."s}}), "not inside a folder"},
        {"empty_zip", make_zip({}), "the zip archive is empty"},
        {"compressed_pickle", make_zip({{"archive/data.pkl", "\x80\x02}."s}}, 8), "is compressed"},
        {"corrupt_pickle", bad_crc, "is corrupt"},
        {"not_a_dict", make_zip({{"archive/data.pkl", "\x80\x02]."s}}), "no dict of tensors"},
        {"missing_storage",
         make_zip({{"archive/data.pkl", Pickler()
                                            .op('}')
                                            .str("w")
                                            .tensor("FloatStorage", "7", 1, 0, {1}, {1})
                                            .op('s')
                                            .done()}}),
         "storage 'archive/data/7' is not in the archive"},
        {"storage_too_small", one_tensor(100, 0, {100}, {1}),
         "should hold 100 float32 elements but has 48 bytes"},
        {"offset_out_of_bounds", one_tensor(12, 9, {2, 2}, {2, 1}),
         "reaches element 12 of a storage of 12"},
        {"stride_out_of_bounds", one_tensor(12, 0, {3, 4}, {5, 1}), "reaches element 13"},
        {"huge_stride", one_tensor(12, 0, {2}, {int64_t{1} << 62}), "reaches element"},
        {"huge_offset", one_tensor(12, int64_t{1} << 62, {1}, {1}), "reaches element"},
        {"negative_offset", one_tensor(12, -1, {1}, {1}), "negative storage offset"},
        {"negative_stride", one_tensor(12, 11, {2}, {-1}), "negative size or stride"},
        {"negative_size", one_tensor(12, 0, {-2}, {1}), "negative size or stride"},
        {"too_many_dims", one_tensor(12, 0, {1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}),
         "6 dimensions"},
        {"too_large", one_tensor(12, 0, {1ll << 40, 1ll << 40}, {0, 0}), "is too large"},
        {"too_large_empty", one_tensor(12, 0, {0, 1ll << 62, 1ll << 62}, {1ll << 62, 1, 1}),
         "is too large"},
        {"size_stride_mismatch", one_tensor(12, 0, {3, 4}, {1}), "stride 1"},
        {"duplicate_name", with_data(two_names.done()), "tensor 'a' appears twice"},
        {"nested_name_clash", with_data(nested_clash.done()), "tensor 'a.b' appears twice"},
        {"storage_retyped", with_data(retyped.done()),
         "storage '0' is referred to with different types"},
        {"cycle", with_data(cycle.done()), "nested more than 32 deep"},
        {"evil_global", with_data(evil.done()),
         "the pickle refers to 'os.system', which is not allowed"},
    };
}

TEST(TorchCheckpoint, HostileCheckpointsGiveErrorsNamingTheProblem) {
    const std::string ok = write_temp("ok.ckpt", one_tensor(12, 0, {3, 4}, {4, 1}));
    EXPECT_EQ(read_torch_checkpoint(ok).tensors.size(), 1u);
    for (const BadCheckpoint& c : hostile_checkpoints()) {
        std::string path = write_temp(std::string("hostile_") + c.name + ".ckpt", c.bytes);
        std::string msg = error_of([&] { read_torch_checkpoint(path); });
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
        EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << c.name << ": " << msg;
        std::remove(path.c_str());
    }
}

TEST(TorchCheckpoint, NonTensorValuesAreSkippedAndEmptyTensorsWork) {
    Pickler p;
    p.op('}').op('(');
    p.str("n").integer(3).str("s").str("text").str("l").op(']');
    p.str("e").tensor("FloatStorage", "0", 0, 5, {0, 4}, {4, 1});
    p.integer(7).tensor("FloatStorage", "1", 3, 0, {3}, {1});  // an int key names a tensor too
    p.op('u');
    std::string path = write_temp("skip.ckpt", make_zip({{"archive/data.pkl", p.done()},
                                                         {"archive/data/0", ""},
                                                         {"archive/data/1", float_bytes(3)}}));
    TensorFile f = read_torch_checkpoint(path);
    ASSERT_EQ(f.tensors.size(), 2u);
    EXPECT_EQ(f.tensors[0].name, "e");
    EXPECT_EQ(f.tensors[0].load().numel(), 0);
    EXPECT_EQ(f.tensors[1].name, "7");
    EXPECT_EQ(f.tensors[1].load().to_vector(), (std::vector<float>{0, 0, 0}));
}

}  // namespace
}  // namespace sd
