#include "io/pickle_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "io_test_util.h"

namespace sd::pickle {
namespace {

using test::error_of;
using namespace std::string_literals;

// Pickle bytes written opcode by opcode.
struct Bytes {
    std::string s;

    Bytes& op(uint8_t c) {
        s += static_cast<char>(c);
        return *this;
    }
    Bytes& raw(const std::string& v) {
        s += v;
        return *this;
    }
    template <class T>
    Bytes& le(T v) {
        s.append(reinterpret_cast<const char*>(&v), sizeof(T));
        return *this;
    }
    Bytes& proto(int v) { return op(0x80).op(static_cast<uint8_t>(v)); }
    Bytes& str(const std::string& v) { return op('X').le<uint32_t>(v.size()).raw(v); }
    Bytes& int1(uint8_t v) { return op('K').op(v); }
    Bytes& global(const std::string& module, const std::string& name) {
        return op('c').raw(module + "\n" + name + "\n");
    }
    Bytes& stop() { return op('.'); }
};

Pickle parse(const std::string& bytes, Limits limits = {}) {
    return read_pickle({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "f.ckpt",
                       "archive/data.pkl", limits);
}

std::string parse_error(const std::string& bytes, Limits limits = {}) {
    return error_of([&] { parse(bytes, limits); });
}

// A torch tensor reduce: _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict()).
Bytes& tensor_v2(Bytes& b, const char* storage_type, const std::string& key, uint8_t numel,
                 uint8_t offset, std::vector<uint8_t> size, std::vector<uint8_t> stride) {
    b.global("torch._utils", "_rebuild_tensor_v2").op('(');
    b.op('(').str("storage").global("torch", storage_type).str(key).str("cpu").int1(numel);
    b.op('t').op('Q').int1(offset);
    b.op('(');
    for (uint8_t d : size) b.int1(d);
    b.op('t').op('(');
    for (uint8_t d : stride) b.int1(d);
    b.op('t').op(0x89).global("collections", "OrderedDict").op(')').op('R');
    return b.op('t').op('R');
}

const Object& dict_value(const Object& dict, const std::string& key) {
    for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
        if (dict.items[i]->kind == Kind::String && dict.items[i]->text == key) {
            return *dict.items[i + 1];
        }
    }
    ADD_FAILURE() << "no key " << key;
    static Object none;
    return none;
}

TEST(PickleReader, Protocol2ScalarsAndContainers) {
    Bytes c;
    c.proto(2).op('}').op('q').op(0).op('(');
    c.str("int").op('J').le<int32_t>(-70000);
    c.str("big").op(0x8a).op(5).raw(std::string("\x00\x00\x00\x00\x80", 5));
    c.str("float").op('G').raw(std::string("\x3f\xf8\x00\x00\x00\x00\x00\x00", 8));
    c.str("list").op(']').op('q').op(1).op('(').int1(1).op('M').le<uint16_t>(300).op('e');
    c.str("pair").int1(7).op(0x88).op(0x86);
    c.str("none").op('N');
    c.str("bytes").op('C').op(3).raw("abc");
    c.str("again").op('h').op(1);
    c.op('u').stop();
    Pickle p = parse(c.s);
    const Object& root = p.root();
    ASSERT_EQ(root.kind, Kind::Dict);
    EXPECT_EQ(root.items.size(), 16u);
    EXPECT_EQ(dict_value(root, "int").integer, -70000);
    EXPECT_EQ(dict_value(root, "big").integer, -(int64_t{1} << 39));
    EXPECT_EQ(dict_value(root, "float").real, 1.5);
    const Object& list = dict_value(root, "list");
    ASSERT_EQ(list.kind, Kind::List);
    ASSERT_EQ(list.items.size(), 2u);
    EXPECT_EQ(list.items[1]->integer, 300);
    const Object& pair = dict_value(root, "pair");
    ASSERT_EQ(pair.kind, Kind::Tuple);
    EXPECT_EQ(pair.items[1]->kind, Kind::Bool);
    EXPECT_EQ(pair.items[1]->integer, 1);
    EXPECT_EQ(dict_value(root, "none").kind, Kind::None);
    EXPECT_EQ(dict_value(root, "bytes").kind, Kind::Bytes);
    EXPECT_EQ(dict_value(root, "bytes").text, "abc");
    // The memo gives back the same object, not a copy.
    EXPECT_EQ(&dict_value(root, "again"), &list);
}

TEST(PickleReader, Protocol4And5Opcodes) {
    Bytes b;
    b.proto(4).op(0x95).le<uint64_t>(0);  // a FRAME (length not checked against its opcodes)
    b.op(0x8c).op(11).raw("collections").op(0x94).op(0x8c).op(11).raw("OrderedDict").op(0x94);
    b.op(0x93).op(0x94).op(')').op('R').op(0x94);  // OrderedDict() through STACK_GLOBAL
    b.op('(');
    b.op(0x8d).le<uint64_t>(1).raw("a").op(0x8e).le<uint64_t>(2).raw("xy");
    b.op(0x8c).op(1).raw("b").op(0x96).le<uint64_t>(1).raw("z");
    b.op(0x8c).op(1).raw("s").op(0x8f).op('(').int1(1).int1(2).op(0x90);
    b.op(0x8c).op(1).raw("f").op('(').int1(3).op(0x91);
    b.op(0x8c).op(1).raw("l").op(0x8b).le<int32_t>(2).raw(std::string("\xff\x7f", 2));
    b.op(0x8c).op(1).raw("m").op('h').op(1);  // memo 1 is "OrderedDict"
    b.op('u').stop();
    Pickle p = parse(b.s);
    const Object& root = p.root();
    ASSERT_EQ(root.kind, Kind::Dict);
    EXPECT_EQ(dict_value(root, "a").text, "xy");
    EXPECT_EQ(dict_value(root, "b").kind, Kind::Bytes);
    EXPECT_EQ(dict_value(root, "s").kind, Kind::Set);
    EXPECT_EQ(dict_value(root, "s").items.size(), 2u);
    EXPECT_EQ(dict_value(root, "f").kind, Kind::Set);
    EXPECT_EQ(dict_value(root, "l").integer, 0x7fff);
    EXPECT_EQ(dict_value(root, "m").text, "OrderedDict");
}

TEST(PickleReader, Protocol0TextOpcodes) {
    // {"i": 12, "t": True, "l": [-5, 2.5], "u": (1,), "g": <l again>} with the text forms of
    // ints, floats and the memo, then POP, POP_MARK and DUP of values left on the stack.
    Bytes b;
    b.op('(').op('d').raw("p0\n");
    b.str("i").raw("I12\n").op('s');
    b.str("t").raw("I01\n").op('s');
    b.str("l").op('(').raw("L-5L\n").raw("F2.5\n").op('l').raw("p1\n").op('s');
    b.str("u").op('(').raw("I1\n").op('t').op('s');
    b.str("g").raw("g1\n").op('s');
    b.int1(9).op('0');                  // POP
    b.op('(').int1(1).int1(2).op('1');  // POP_MARK
    b.op('2').op('0');                  // DUP then POP
    b.stop();
    Pickle p = parse(b.s);
    const Object& root = p.root();
    ASSERT_EQ(root.kind, Kind::Dict);
    EXPECT_EQ(dict_value(root, "i").integer, 12);
    EXPECT_EQ(dict_value(root, "t").kind, Kind::Bool);
    const Object& l = dict_value(root, "l");
    ASSERT_EQ(l.items.size(), 2u);
    EXPECT_EQ(l.items[0]->integer, -5);
    EXPECT_EQ(l.items[1]->real, 2.5);
    EXPECT_EQ(dict_value(root, "u").items.size(), 1u);
    EXPECT_EQ(&dict_value(root, "g"), &l);
}

TEST(PickleReader, RebuildsTorchTensorsAndStorages) {
    Bytes b;
    b.proto(2).global("collections", "OrderedDict").op(')').op('R').op('(');
    b.str("w");
    tensor_v2(b, "HalfStorage", "0", 12, 0, {3, 4}, {4, 1});
    b.str("t");
    tensor_v2(b, "HalfStorage", "0", 12, 2, {2, 2}, {1, 4});
    b.str("p").global("torch._utils", "_rebuild_parameter").op('(');
    tensor_v2(b, "FloatStorage", "1", 1, 0, {}, {});
    b.op(0x88).global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
    b.str("v3").global("torch._utils", "_rebuild_tensor_v3").op('(');
    b.op('(').str("storage").global("torch.storage", "UntypedStorage").str("2").str("cpu").int1(8);
    b.op('t').op('Q').int1(0).int1(8).op(0x85).int1(1).op(0x85).op(0x89);
    b.op('}').global("torch", "float8_e4m3fn").op('t').op('R');
    b.str("old").global("torch._utils", "_rebuild_tensor").op('(');
    b.op('(').str("storage").global("torch", "LongStorage").str("3").str("cuda:0").int1(2);
    b.op('t').op('Q').int1(1).int1(1).op(0x85).int1(1).op(0x85).op('t').op('R');
    b.op('u');
    // The state dict's _metadata attribute.
    b.op('}').str("_metadata").global("collections", "OrderedDict").op(')').op('R').op('s');
    b.op('b').stop();
    Pickle p = parse(b.s);
    ASSERT_EQ(p.tensors().size(), 5u);
    ASSERT_EQ(p.storages().size(), 5u);
    const TensorInfo& w = p.tensors()[0];
    EXPECT_EQ(w.elem, ElemType::F16);
    EXPECT_EQ(w.size, (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(w.stride, (std::vector<int64_t>{4, 1}));
    const TensorInfo& t = p.tensors()[1];
    EXPECT_EQ(t.offset, 2);
    EXPECT_EQ(t.stride, (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(p.storages()[t.storage].key, "0");
    EXPECT_EQ(p.storages()[t.storage].numel, 12);
    const Object& param = dict_value(p.root(), "p");
    ASSERT_EQ(param.kind, Kind::Tensor);
    EXPECT_TRUE(p.tensors()[param.index].size.empty());
    EXPECT_EQ(p.tensors()[param.index].elem, ElemType::F32);
    const TensorInfo& v3 = p.tensors()[dict_value(p.root(), "v3").index];
    EXPECT_EQ(v3.elem, ElemType::F8_E4M3);
    EXPECT_EQ(p.storages()[v3.storage].elem, ElemType::U8);
    const TensorInfo& old = p.tensors()[dict_value(p.root(), "old").index];
    EXPECT_EQ(old.elem, ElemType::I64);
    EXPECT_EQ(p.storages()[old.storage].location, "cuda:0");
}

TEST(PickleReader, CyclesAndSharingAreFine) {
    // l = []; l.append(l); l.append(l) -- a cycle, freed with the arena.
    Bytes b;
    b.proto(2).op(']').op('q').op(0).op('h').op(0).op('a').op('h').op(0).op('a').stop();
    Pickle p = parse(b.s);
    ASSERT_EQ(p.root().items.size(), 2u);
    EXPECT_EQ(p.root().items[0], &p.root());
}

struct BadCase {
    const char* name;
    std::string bytes;
    const char* message;
};

TEST(PickleReader, HostilePicklesGiveErrorsWithFileAndOffset) {
    auto p2 = [](const std::string& body) { return "\x80\x02"s + body; };
    // ('TAG', torch.TYPE, '0', 'cpu', NUMEL) then BINPERSID; NUMEL is 1 for 'K', None for 'N'.
    auto persid = [](const char* tag, const char* type, const char* location, char numel) {
        Bytes b;
        b.proto(2).op('(').str(tag);
        *type ? b.global("torch", type) : b.int1(1);
        b.str("0").str(location);
        numel == 'K' ? b.int1(1) : b.op('N');
        return b.op('t').op('Q').stop().s;
    };
    std::vector<BadCase> cases = {
        {"unknown_opcode", p2("\xff."), "byte 2: unknown opcode 0xff"},
        {"empty", "", "byte 0: the pickle ends without a STOP"},
        {"no_stop", p2("K\x01"), "byte 4: the pickle ends without a STOP"},
        {"stop_on_empty", p2("."), "byte 2: stack underflow"},
        {"pop_underflow", p2("0."), "stack underflow"},
        {"append_underflow", p2("]a."), "stack underflow"},
        {"underflow_below_mark", p2("K\x01(a."), "byte 5: stack underflow"},
        {"memo_out_of_range", p2("K\x01h\x05."), "memo index 5 out of range"},
        {"long_memo_out_of_range", p2("K\x01j\xff\xff\xff\x7f."), "memo index 2147483647"},
        {"text_get_bad", p2("g-1x\n."), "bad memo index"},
        {"put_negative", p2("K\x01p-3\n."), "negative memo index"},
        {"tuple_without_mark", p2("K\x01t."), "no MARK"},
        {"setitems_without_mark", p2("}u."), "no MARK"},
        {"pop_mark_without_mark", p2("1."), "no MARK"},
        {"dict_odd",
         p2("(K\x01"
            "d."),
         "odd number"},
        {"append_to_dict",
         p2("}K\x01"
            "a."),
         "APPEND needs a list"},
        {"setitem_on_list", p2("]K\x01K\x02s."), "SETITEM needs a dict"},
        {"truncated_int", p2("J\x01\x02"), "truncated: BININT needs 4 bytes but only 2 remain"},
        {"truncated_float", p2("G\x00"s), "truncated"},
        {"string_past_end", p2("X\xe8\x03\x00\x00"s + "abc."), "BINUNICODE needs 1000 bytes"},
        {"short_string_past_end", p2("\x8c\x09"s + "abc"), "SHORT_BINUNICODE needs 9 bytes"},
        {"bytes8_absurd", p2("\x8e\x00\x00\x00\x00\x00\x00\x00\x40."s),
         "needs 4611686018427387904"},
        {"unicode8_absurd", p2("\x8d\xff\xff\xff\xff\xff\xff\xff\xff."), "BINUNICODE8 needs"},
        {"binstring_negative", p2("T\xff\xff\xff\xff."), "negative length"},
        {"long4_absurd", p2("\x8b\x00\x00\x00\x40."s), "too large"},
        {"long4_negative", p2("\x8b\xff\xff\xff\xff."), "negative length"},
        {"long1_too_big", p2("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."s), "too large"},
        {"frame_past_end", "\x80\x04\x95\x00\x01\x00\x00\x00\x00\x00\x00."s, "FRAME"},
        {"int_text_overflow", p2("I99999999999999999999999\n."), "not an integer"},
        {"int_text_unterminated", p2("I12"), "no end of line"},
        {"float_text_bad", p2("Fabc\n."), "not a float"},
        {"line_too_long", p2("c" + std::string(5000, 'a')), "longer than"},
        {"protocol_6", "\x80\x06K\x01.", "unsupported pickle protocol 6"},
        {"inst", p2("(ios\nsystem\n."), "not supported"},
        {"obj", p2("(o."), "not supported"},
        {"ext1", p2("\x82\x01."), "not supported"},
        {"persid_text", p2("P0\n."), "not supported"},
        {"string_text", p2("S'abc'\n."), "not supported"},
        {"next_buffer", p2("\x97."), "not supported"},
        {"reduce_non_callable", p2("K\x01)R."), "REDUCE on something that is not a callable"},
        {"reduce_args_not_tuple", p2("ccollections\nOrderedDict\n]R."), "not a tuple"},
        {"reduce_storage_type", p2("ctorch\nFloatStorage\n)R."), "cannot be called"},
        {"ordered_dict_args", p2("ccollections\nOrderedDict\n]\x85R."), "with arguments"},
        {"newobj_other", p2("ctorch\nFloatStorage\n)\x81."), "NEWOBJ"},
        {"build_on_list", p2("]}b."), "BUILD on a value"},
        {"build_list_state", p2("}]b."), "BUILD on a value"},
        {"stack_global_not_strings", p2("K\x01K\x02\x93."), "STACK_GLOBAL needs two strings"},
        {"persid_not_tuple", p2("K\x01Q."), "persistent id is not"},
        {"persid_wrong_tag", persid("x", "FloatStorage", "cpu", 'K'), "persistent id is not"},
        {"persid_no_type", persid("storage", "", "cpu", 'K'), "names no storage type"},
        {"persid_bad_numel", persid("storage", "FloatStorage", "cpu", 'N'), "wrong type"},
        {"rebuild_no_storage", p2("ctorch._utils\n_rebuild_tensor_v2\n(K\x00K\x00)))\x89NtR."s),
         "not a storage"},
        {"rebuild_few_args", p2("ctorch._utils\n_rebuild_tensor_v2\n)R."),
         "takes 6 arguments, not 0"},
        {"parameter_not_tensor", p2("ctorch._utils\n_rebuild_parameter\n(K\x01\x89NtR."),
         "needs a tensor"},
    };
    for (const BadCase& c : cases) {
        std::string msg = parse_error(c.bytes);
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
        EXPECT_EQ(msg.rfind("f.ckpt: archive/data.pkl byte ", 0), 0u) << c.name << ": " << msg;
    }
}

TEST(PickleReader, GlobalsOutsideTheAllowListAreRefused) {
    auto p2 = [](const std::string& body) { return "\x80\x02"s + body; };
    const std::string tail =
        ", which is not allowed (only tensors and plain containers are loaded)";
    EXPECT_EQ(parse_error(p2("cos\nsystem\n(X\x02\x00\x00\x00lstR."s)),
              "f.ckpt: the pickle refers to 'os.system'" + tail);
    EXPECT_EQ(parse_error(p2("\x8c\x08\x62uiltins\x8c\x04\x65val\x93.")),
              "f.ckpt: the pickle refers to 'builtins.eval'" + tail);
    EXPECT_EQ(parse_error(p2("ctorch.nn.modules.linear\nLinear\n.")),
              "f.ckpt: the pickle refers to 'torch.nn.modules.linear.Linear'" + tail);
    EXPECT_EQ(parse_error(p2("ctorch\nComplexFloatStorage\n.")),
              "f.ckpt: the pickle refers to 'torch.ComplexFloatStorage'" + tail);
    EXPECT_EQ(parse_error(p2("c__builtin__\ngetattr\n.")),
              "f.ckpt: the pickle refers to '__builtin__.getattr'" + tail);
}

TEST(PickleReader, LimitsBoundMemoryAndNesting) {
    std::string deep = "\x80\x02"s + std::string(1001, '(') + ".";
    EXPECT_NE(parse_error(deep).find("MARKs nested deeper than 1000"), std::string::npos);
    // A list that DUPs itself forever: each opcode costs one value.
    std::string dups = "\x80\x02]"s + std::string(100, '2') + ".";
    Limits small;
    small.max_values = 50;
    EXPECT_NE(parse_error(dups, small).find("more than 50 values"), std::string::npos);
    // Lists nested through APPEND (no MARK) need no recursion to read.
    std::string nested = "\x80\x02]";
    for (int i = 0; i < 100000; ++i) nested += "]";
    for (int i = 0; i < 100000; ++i) nested += "a";
    nested += ".";
    EXPECT_EQ(parse(nested).root().kind, Kind::List);
}

TEST(PickleReader, EveryTruncationAndCorruptionFailsCleanly) {
    Bytes b;
    b.proto(2).global("collections", "OrderedDict").op('q').op(0).op(')').op('R').op('(');
    b.str("w");
    tensor_v2(b, "HalfStorage", "0", 12, 0, {3, 4}, {4, 1});
    b.op('u').stop();
    ASSERT_EQ(parse(b.s).tensors().size(), 1u);
    for (size_t n = 0; n < b.s.size(); ++n) {
        std::string msg = parse_error(b.s.substr(0, n));
        EXPECT_NE(msg.find("f.ckpt"), std::string::npos) << n;
    }
    // Random corruptions either parse or fail with sd::Error; never crash (run under ASan).
    std::mt19937 gen(7);
    for (int i = 0; i < 20000; ++i) {
        std::string bad = b.s;
        int flips = 1 + static_cast<int>(gen() % 3);
        for (int k = 0; k < flips; ++k) bad[gen() % bad.size()] = static_cast<char>(gen());
        try {
            parse(bad);
        } catch (const Error&) {
        }
    }
}

}  // namespace
}  // namespace sd::pickle
