// The pickle virtual machine, restricted: opcodes as listed in CPython's pickletools. The
// stack is flat with a list of MARK positions; what pickle.py calls the current stack is
// the part above the last mark, and popping below it is an underflow. Nothing recurses.
#include "io/pickle_reader.h"

#include <charconv>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "base/error.h"

namespace sd::pickle {
namespace {

enum Op : uint8_t {
    MARK = '(',
    STOP = '.',
    POP = '0',
    POP_MARK = '1',
    DUP = '2',
    FLOAT = 'F',
    INT = 'I',
    BININT = 'J',
    BININT1 = 'K',
    LONG = 'L',
    BININT2 = 'M',
    NONE = 'N',
    PERSID = 'P',
    BINPERSID = 'Q',
    REDUCE = 'R',
    STRING = 'S',
    BINSTRING = 'T',
    SHORT_BINSTRING = 'U',
    UNICODE = 'V',
    BINUNICODE = 'X',
    APPEND = 'a',
    BUILD = 'b',
    GLOBAL = 'c',
    DICT = 'd',
    EMPTY_DICT = '}',
    APPENDS = 'e',
    GET = 'g',
    BINGET = 'h',
    INST = 'i',
    LONG_BINGET = 'j',
    LIST = 'l',
    EMPTY_LIST = ']',
    OBJ = 'o',
    PUT = 'p',
    BINPUT = 'q',
    LONG_BINPUT = 'r',
    SETITEM = 's',
    TUPLE = 't',
    EMPTY_TUPLE = ')',
    SETITEMS = 'u',
    BINFLOAT = 'G',
    PROTO = 0x80,
    NEWOBJ = 0x81,
    EXT1 = 0x82,
    EXT2 = 0x83,
    EXT4 = 0x84,
    TUPLE1 = 0x85,
    TUPLE2 = 0x86,
    TUPLE3 = 0x87,
    NEWTRUE = 0x88,
    NEWFALSE = 0x89,
    LONG1 = 0x8a,
    LONG4 = 0x8b,
    BINBYTES = 'B',
    SHORT_BINBYTES = 'C',
    SHORT_BINUNICODE = 0x8c,
    BINUNICODE8 = 0x8d,
    BINBYTES8 = 0x8e,
    EMPTY_SET = 0x8f,
    ADDITEMS = 0x90,
    FROZENSET = 0x91,
    NEWOBJ_EX = 0x92,
    STACK_GLOBAL = 0x93,
    MEMOIZE = 0x94,
    FRAME = 0x95,
    BYTEARRAY8 = 0x96,
    NEXT_BUFFER = 0x97,
    READONLY_BUFFER = 0x98,
};

struct AllowedGlobal {
    const char* module;
    const char* name;
    Global global;
    ElemType elem;
};

constexpr AllowedGlobal kAllowed[] = {
    {"collections", "OrderedDict", Global::OrderedDict, ElemType::U8},
    {"torch._utils", "_rebuild_tensor", Global::RebuildTensor, ElemType::U8},
    {"torch._utils", "_rebuild_tensor_v2", Global::RebuildTensorV2, ElemType::U8},
    {"torch._utils", "_rebuild_tensor_v3", Global::RebuildTensorV3, ElemType::U8},
    {"torch._utils", "_rebuild_parameter", Global::RebuildParameter, ElemType::U8},
    {"torch._utils", "_rebuild_parameter_with_state", Global::RebuildParameterWithState,
     ElemType::U8},
    {"torch", "FloatStorage", Global::StorageType, ElemType::F32},
    {"torch", "HalfStorage", Global::StorageType, ElemType::F16},
    {"torch", "BFloat16Storage", Global::StorageType, ElemType::BF16},
    {"torch", "DoubleStorage", Global::StorageType, ElemType::F64},
    {"torch", "LongStorage", Global::StorageType, ElemType::I64},
    {"torch", "IntStorage", Global::StorageType, ElemType::I32},
    {"torch", "ShortStorage", Global::StorageType, ElemType::I16},
    {"torch", "CharStorage", Global::StorageType, ElemType::I8},
    {"torch", "ByteStorage", Global::StorageType, ElemType::U8},
    {"torch", "BoolStorage", Global::StorageType, ElemType::Bool},
    // An untyped storage is saved with a byte count; _rebuild_tensor_v3 gives the dtype.
    {"torch", "UntypedStorage", Global::StorageType, ElemType::U8},
    {"torch.storage", "UntypedStorage", Global::StorageType, ElemType::U8},
    {"torch", "float32", Global::DType, ElemType::F32},
    {"torch", "float16", Global::DType, ElemType::F16},
    {"torch", "bfloat16", Global::DType, ElemType::BF16},
    {"torch", "float64", Global::DType, ElemType::F64},
    {"torch", "int64", Global::DType, ElemType::I64},
    {"torch", "int32", Global::DType, ElemType::I32},
    {"torch", "int16", Global::DType, ElemType::I16},
    {"torch", "int8", Global::DType, ElemType::I8},
    {"torch", "uint8", Global::DType, ElemType::U8},
    {"torch", "bool", Global::DType, ElemType::Bool},
    {"torch", "float8_e4m3fn", Global::DType, ElemType::F8_E4M3},
    {"torch", "float8_e5m2", Global::DType, ElemType::F8_E5M2},
};

constexpr size_t kMaxLine = 4096;
constexpr int kMaxHighestProtocol = 5;

}  // namespace

// Outside the anonymous namespace: Pickle names it as a friend.
class Unpickler {
  public:
    Unpickler(std::span<const uint8_t> data, const std::string& path, const std::string& name,
              const Limits& limits)
        : data_(data), path_(path), name_(name), limits_(limits) {}

    Pickle run();

  private:
    [[noreturn]] void error(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

    // ---- reading the opcode stream ----
    size_t remaining() const { return data_.size() - pos_; }
    std::string_view take(uint64_t n, const char* what);
    template <class T>
    T fixed(const char* what);
    std::string_view line(const char* what);
    uint64_t length(int bytes, const char* what);

    // ---- the stack, the marks and the memo ----
    size_t frame_base() const { return marks_.empty() ? 0 : marks_.back(); }
    Object* make(Kind kind);
    void push(Object* o);
    Object* pop();
    Object* top();
    std::vector<Object*> pop_mark();
    void count_values(size_t n);
    void memo_put(int64_t index);
    void memo_get(int64_t index);

    // ---- opcodes ----
    bool step(uint8_t op);
    bool step_scalar(uint8_t op);
    bool step_container(uint8_t op);
    bool step_memo(uint8_t op);
    bool step_object(uint8_t op);
    void push_int(int64_t v);
    void push_text(Kind kind, int length_bytes, const char* what);
    void push_long(uint64_t n);
    void push_text_int(bool is_long);
    void push_text_float();
    Object* container_under_top(Kind kind, const char* op);
    void append_items(std::vector<Object*> items, Kind kind, const char* op);
    void set_items(std::vector<Object*> items, const char* op);
    void find_global(std::string_view module, std::string_view name);
    void reduce();
    void new_object(bool with_kwargs);
    void build();
    void persistent_load();
    Object* rebuild_tensor(const Object& fn, const std::vector<const Object*>& args);
    int64_t int_arg(const Object* o, const char* what);
    std::vector<int64_t> int_tuple_arg(const Object* o, const char* what);

    std::span<const uint8_t> data_;
    const std::string& path_;
    const std::string& name_;
    Limits limits_;
    size_t pos_ = 0;
    size_t op_pos_ = 0;
    size_t values_ = 0;
    Pickle out_;
    std::vector<Object*> stack_;
    std::vector<size_t> marks_;
    std::unordered_map<int64_t, Object*> memo_;
};

void Unpickler::error(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string what = vstrfmt(fmt, args);
    va_end(args);
    fail("%s: %s byte %zu: %s", path_.c_str(), name_.c_str(), op_pos_, what.c_str());
}

std::string_view Unpickler::take(uint64_t n, const char* what) {
    if (n > remaining()) {
        error("truncated: %s needs %llu bytes but only %zu remain", what, (unsigned long long)n,
              remaining());
    }
    std::string_view s(reinterpret_cast<const char*>(data_.data() + pos_), n);
    pos_ += n;
    return s;
}

template <class T>
T Unpickler::fixed(const char* what) {
    std::string_view s = take(sizeof(T), what);
    T v;
    std::memcpy(&v, s.data(), sizeof(T));
    return v;  // little-endian, as pickle's binary integers and the host
}

std::string_view Unpickler::line(const char* what) {
    const size_t n = std::min(remaining(), kMaxLine + 1);
    if (n == 0) error("truncated: %s has no end of line", what);
    const void* nl = std::memchr(data_.data() + pos_, '\n', n);
    if (!nl) {
        if (n > kMaxLine) error("%s: a text line longer than %zu bytes", what, kMaxLine);
        error("truncated: %s has no end of line", what);
    }
    size_t len = static_cast<const uint8_t*>(nl) - (data_.data() + pos_);
    std::string_view s = take(len + 1, what);
    return s.substr(0, len);
}

uint64_t Unpickler::length(int bytes, const char* what) {
    switch (bytes) {
        case 1:
            return fixed<uint8_t>(what);
        case 4:
            return fixed<uint32_t>(what);
        default:
            return fixed<uint64_t>(what);
    }
}

void Unpickler::count_values(size_t n) {
    values_ += n;
    if (values_ > limits_.max_values) {
        error("the pickle holds more than %zu values; it is not a model checkpoint",
              limits_.max_values);
    }
}

Object* Unpickler::make(Kind kind) {
    count_values(1);
    Object& o = out_.objects_.emplace_back();
    o.kind = kind;
    return &o;
}

void Unpickler::push(Object* o) {
    count_values(1);
    stack_.push_back(o);
}

Object* Unpickler::pop() {
    if (stack_.size() <= frame_base()) error("stack underflow");
    Object* o = stack_.back();
    stack_.pop_back();
    return o;
}

Object* Unpickler::top() {
    if (stack_.size() <= frame_base()) error("stack underflow");
    return stack_.back();
}

std::vector<Object*> Unpickler::pop_mark() {
    if (marks_.empty()) error("no MARK to pop to");
    const size_t base = marks_.back();
    marks_.pop_back();
    std::vector<Object*> items(stack_.begin() + static_cast<ptrdiff_t>(base), stack_.end());
    stack_.resize(base);
    return items;
}

void Unpickler::memo_put(int64_t index) {
    if (index < 0) error("negative memo index %lld", (long long)index);
    Object* o = top();
    auto [it, inserted] = memo_.try_emplace(index, o);
    if (inserted) {
        count_values(1);
    } else {
        it->second = o;
    }
}

void Unpickler::memo_get(int64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end())
        error("memo index %lld out of range (nothing was stored there)", (long long)index);
    push(it->second);
}

Pickle Unpickler::run() {
    while (pos_ < data_.size()) {
        op_pos_ = pos_;
        const uint8_t op = data_[pos_++];
        if (op == STOP) {
            out_.root_ = pop();
            return std::move(out_);
        }
        if (!step(op)) error("unknown opcode 0x%02x", op);
    }
    op_pos_ = pos_;
    error("the pickle ends without a STOP opcode (truncated?)");
}

bool Unpickler::step(uint8_t op) {
    return step_scalar(op) || step_container(op) || step_memo(op) || step_object(op);
}

bool Unpickler::step_scalar(uint8_t op) {
    switch (op) {
        case PROTO: {
            uint8_t v = fixed<uint8_t>("PROTO");
            if (v > kMaxHighestProtocol) error("unsupported pickle protocol %u", v);
            return true;
        }
        case FRAME:
            // Frames only group opcodes for buffered reading; the whole pickle is in memory.
            if (fixed<uint64_t>("FRAME") > remaining()) error("truncated: FRAME runs past the end");
            return true;
        case NONE:
            push(make(Kind::None));
            return true;
        case NEWTRUE:
        case NEWFALSE: {
            Object* o = make(Kind::Bool);
            o->integer = op == NEWTRUE;
            push(o);
            return true;
        }
        case BININT:
            push_int(fixed<int32_t>("BININT"));
            return true;
        case BININT1:
            push_int(fixed<uint8_t>("BININT1"));
            return true;
        case BININT2:
            push_int(fixed<uint16_t>("BININT2"));
            return true;
        case LONG1:
            push_long(fixed<uint8_t>("LONG1"));
            return true;
        case LONG4: {
            int32_t n = fixed<int32_t>("LONG4");
            if (n < 0) error("LONG4 with negative length %d", n);
            push_long(static_cast<uint64_t>(n));
            return true;
        }
        case INT:
        case LONG:
            push_text_int(op == LONG);
            return true;
        case BINFLOAT: {
            uint64_t bits = fixed<uint64_t>("BINFLOAT");
            bits = __builtin_bswap64(bits);  // big-endian in the pickle
            Object* o = make(Kind::Float);
            std::memcpy(&o->real, &bits, 8);
            push(o);
            return true;
        }
        case FLOAT:
            push_text_float();
            return true;
        case SHORT_BINSTRING:
            push_text(Kind::String, 1, "SHORT_BINSTRING");
            return true;
        case BINSTRING: {
            int32_t n = fixed<int32_t>("BINSTRING");
            if (n < 0) error("BINSTRING with negative length %d", n);
            Object* o = make(Kind::String);
            o->text = take(static_cast<uint64_t>(n), "BINSTRING");
            push(o);
            return true;
        }
        case SHORT_BINUNICODE:
            push_text(Kind::String, 1, "SHORT_BINUNICODE");
            return true;
        case BINUNICODE:
            push_text(Kind::String, 4, "BINUNICODE");
            return true;
        case BINUNICODE8:
            push_text(Kind::String, 8, "BINUNICODE8");
            return true;
        case SHORT_BINBYTES:
            push_text(Kind::Bytes, 1, "SHORT_BINBYTES");
            return true;
        case BINBYTES:
            push_text(Kind::Bytes, 4, "BINBYTES");
            return true;
        case BINBYTES8:
            push_text(Kind::Bytes, 8, "BINBYTES8");
            return true;
        case BYTEARRAY8:
            push_text(Kind::Bytes, 8, "BYTEARRAY8");
            return true;
    }
    return false;
}

void Unpickler::push_int(int64_t v) {
    Object* o = make(Kind::Int);
    o->integer = v;
    push(o);
}

void Unpickler::push_text(Kind kind, int length_bytes, const char* what) {
    const uint64_t n = length(length_bytes, what);
    Object* o = make(kind);
    o->text = take(n, what);
    push(o);
}

// LONG1/LONG4: n bytes of little-endian two's complement.
void Unpickler::push_long(uint64_t n) {
    if (n > 8)
        error("integer of %llu bytes is too large (at most 8 are supported)",
              (unsigned long long)n);
    std::string_view bytes = take(n, "LONG");
    uint64_t v = 0;
    for (uint64_t i = 0; i < n; ++i)
        v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
    if (n > 0 && n < 8 && (static_cast<uint8_t>(bytes[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
    push_int(static_cast<int64_t>(v));
}

void Unpickler::push_text_int(bool is_long) {
    std::string_view s = line(is_long ? "LONG" : "INT");
    if (!is_long && (s == "00" || s == "01")) {
        Object* o = make(Kind::Bool);
        o->integer = s == "01";
        push(o);
        return;
    }
    if (is_long && !s.empty() && s.back() == 'L') s.remove_suffix(1);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty())
        error("'%.*s' is not an integer that fits in 64 bits",
              static_cast<int>(std::min<size_t>(s.size(), 40)), s.data());
    push_int(v);
}

void Unpickler::push_text_float() {
    std::string s(line("FLOAT"));
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
        error("'%.*s' is not a float", static_cast<int>(std::min<size_t>(s.size(), 40)), s.c_str());
    Object* o = make(Kind::Float);
    o->real = v;
    push(o);
}

bool Unpickler::step_container(uint8_t op) {
    switch (op) {
        case MARK:
            if (marks_.size() >= limits_.max_marks)
                error("MARKs nested deeper than %zu levels", limits_.max_marks);
            marks_.push_back(stack_.size());
            return true;
        case POP:
            // As pickle.py: on an empty stack above a MARK, POP discards the MARK.
            if (stack_.size() > frame_base()) {
                stack_.pop_back();
            } else if (!marks_.empty()) {
                pop_mark();
            } else {
                error("stack underflow");
            }
            return true;
        case POP_MARK:
            pop_mark();
            return true;
        case DUP:
            push(top());
            return true;
        case EMPTY_TUPLE:
        case EMPTY_LIST:
        case EMPTY_DICT:
        case EMPTY_SET:
            push(make(op == EMPTY_TUPLE  ? Kind::Tuple
                      : op == EMPTY_LIST ? Kind::List
                      : op == EMPTY_DICT ? Kind::Dict
                                         : Kind::Set));
            return true;
        case TUPLE:
        case LIST:
        case FROZENSET: {
            std::vector<Object*> items = pop_mark();
            Object* o = make(op == TUPLE ? Kind::Tuple : op == LIST ? Kind::List : Kind::Set);
            o->items.assign(items.begin(), items.end());
            push(o);
            return true;
        }
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
            const size_t n = op - TUPLE1 + 1;
            Object* o = make(Kind::Tuple);
            o->items.resize(n);
            for (size_t i = n; i-- > 0;) o->items[i] = pop();
            push(o);
            return true;
        }
        case DICT: {
            std::vector<Object*> items = pop_mark();
            push(make(Kind::Dict));
            set_items(std::move(items), "DICT");
            return true;
        }
        case APPEND: {
            Object* v = pop();
            append_items({v}, Kind::List, "APPEND");
            return true;
        }
        case APPENDS:
            append_items(pop_mark(), Kind::List, "APPENDS");
            return true;
        case ADDITEMS:
            append_items(pop_mark(), Kind::Set, "ADDITEMS");
            return true;
        case SETITEM: {
            Object* v = pop();
            Object* k = pop();
            set_items({k, v}, "SETITEM");
            return true;
        }
        case SETITEMS:
            set_items(pop_mark(), "SETITEMS");
            return true;
    }
    return false;
}

Object* Unpickler::container_under_top(Kind kind, const char* op) {
    Object* c = top();
    if (c->kind != kind) {
        error("%s needs a %s under its operands", op,
              kind == Kind::List  ? "list"
              : kind == Kind::Set ? "set"
                                  : "dict");
    }
    return c;
}

void Unpickler::append_items(std::vector<Object*> items, Kind kind, const char* op) {
    Object* c = container_under_top(kind, op);
    count_values(items.size());
    c->items.insert(c->items.end(), items.begin(), items.end());
}

void Unpickler::set_items(std::vector<Object*> items, const char* op) {
    if (items.size() % 2 != 0) error("%s with an odd number of keys and values", op);
    append_items(std::move(items), Kind::Dict, op);
}

bool Unpickler::step_memo(uint8_t op) {
    switch (op) {
        case BINPUT:
            memo_put(fixed<uint8_t>("BINPUT"));
            return true;
        case LONG_BINPUT:
            memo_put(fixed<uint32_t>("LONG_BINPUT"));
            return true;
        case MEMOIZE:
            memo_put(static_cast<int64_t>(memo_.size()));
            return true;
        case BINGET:
            memo_get(fixed<uint8_t>("BINGET"));
            return true;
        case LONG_BINGET:
            memo_get(fixed<uint32_t>("LONG_BINGET"));
            return true;
        case PUT:
        case GET: {
            std::string_view s = line(op == PUT ? "PUT" : "GET");
            int64_t index = -1;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), index);
            if (ec != std::errc() || end != s.data() + s.size() || s.empty())
                error("bad memo index '%.*s'", static_cast<int>(std::min<size_t>(s.size(), 40)),
                      s.data());
            op == PUT ? memo_put(index) : memo_get(index);
            return true;
        }
    }
    return false;
}

bool Unpickler::step_object(uint8_t op) {
    switch (op) {
        case GLOBAL: {
            std::string module(line("GLOBAL module"));
            std::string_view name = line("GLOBAL name");
            find_global(module, name);
            return true;
        }
        case STACK_GLOBAL: {
            Object* name = pop();
            Object* module = pop();
            if (module->kind != Kind::String || name->kind != Kind::String)
                error("STACK_GLOBAL needs two strings");
            find_global(module->text, name->text);
            return true;
        }
        case REDUCE:
            reduce();
            return true;
        case NEWOBJ:
        case NEWOBJ_EX:
            new_object(op == NEWOBJ_EX);
            return true;
        case BUILD:
            build();
            return true;
        case BINPERSID:
            persistent_load();
            return true;
        case PERSID:
        case STRING:
        case UNICODE:
        case INST:
        case OBJ:
        case EXT1:
        case EXT2:
        case EXT4:
        case NEXT_BUFFER:
        case READONLY_BUFFER:
            error("opcode '%c' (0x%02x) is not supported in a model checkpoint",
                  op < 0x80 ? static_cast<char>(op) : '?', op);
    }
    return false;
}

void Unpickler::find_global(std::string_view module, std::string_view name) {
    for (const AllowedGlobal& g : kAllowed) {
        if (module == g.module && name == g.name) {
            Object* o = make(Kind::Global);
            o->global = g.global;
            o->elem = g.elem;
            o->text = std::string(module) + "." + std::string(name);
            push(o);
            return;
        }
    }
    const int m = static_cast<int>(std::min<size_t>(module.size(), 200));
    const int n = static_cast<int>(std::min<size_t>(name.size(), 200));
    fail(
        "%s: the pickle refers to '%.*s.%.*s', which is not allowed (only tensors and plain "
        "containers are loaded)",
        path_.c_str(), m, module.data(), n, name.data());
}

void Unpickler::reduce() {
    Object* args = pop();
    Object* fn = pop();
    if (fn->kind != Kind::Global) error("REDUCE on something that is not a callable");
    if (args->kind != Kind::Tuple)
        error("REDUCE of '%s' with arguments that are not a tuple", fn->text.c_str());
    const std::vector<const Object*>& a = args->items;
    switch (fn->global) {
        case Global::OrderedDict:
            if (!a.empty()) error("collections.OrderedDict with arguments is not supported");
            push(make(Kind::Dict));
            return;
        case Global::RebuildTensor:
        case Global::RebuildTensorV2:
        case Global::RebuildTensorV3:
            push(rebuild_tensor(*fn, a));
            return;
        case Global::RebuildParameter:
        case Global::RebuildParameterWithState:
            if (a.size() != (fn->global == Global::RebuildParameter ? 3u : 4u) ||
                a[0]->kind != Kind::Tensor)
                error("%s needs a tensor and %s more arguments", fn->text.c_str(),
                      fn->global == Global::RebuildParameter ? "2" : "3");
            push(const_cast<Object*>(a[0]));
            return;
        case Global::StorageType:
        case Global::DType:
            break;
    }
    error("'%s' cannot be called", fn->text.c_str());
}

void Unpickler::new_object(bool with_kwargs) {
    if (with_kwargs) pop();
    pop();  // the arguments: an OrderedDict takes none that matter
    Object* cls = pop();
    if (cls->kind != Kind::Global || cls->global != Global::OrderedDict)
        error("NEWOBJ of something other than collections.OrderedDict");
    push(make(Kind::Dict));
}

// BUILD sets an object's state. The only state torch writes for plain containers is the
// attribute dict of an OrderedDict (a state_dict's _metadata), which is not needed.
void Unpickler::build() {
    Object* state = pop();
    Object* obj = top();
    if (obj->kind == Kind::Dict && (state->kind == Kind::Dict || state->kind == Kind::None)) return;
    error("BUILD on a value of this kind is not supported (only an OrderedDict's attributes are)");
}

// A persistent id as torch.save writes it: ('storage', storage_type, key, location, numel).
void Unpickler::persistent_load() {
    Object* pid = pop();
    const std::vector<const Object*>& t = pid->items;
    if (pid->kind != Kind::Tuple || t.size() != 5 || t[0]->kind != Kind::String ||
        t[0]->text != "storage") {
        error("persistent id is not a ('storage', type, key, location, size) tuple");
    }
    if (t[1]->kind != Kind::Global || t[1]->global != Global::StorageType)
        error("persistent id names no storage type");
    if (t[2]->kind != Kind::String || t[3]->kind != Kind::String || t[4]->kind != Kind::Int)
        error("persistent id has a key, location or size of the wrong type");
    if (t[4]->integer < 0) error("storage of negative size %lld", (long long)t[4]->integer);
    Object* o = make(Kind::Storage);
    o->index = static_cast<uint32_t>(out_.storages_.size());
    out_.storages_.push_back({t[1]->elem, t[2]->text, t[3]->text, t[4]->integer});
    push(o);
}

int64_t Unpickler::int_arg(const Object* o, const char* what) {
    if (o->kind != Kind::Int) error("tensor %s is not an integer", what);
    return o->integer;
}

std::vector<int64_t> Unpickler::int_tuple_arg(const Object* o, const char* what) {
    if (o->kind != Kind::Tuple && o->kind != Kind::List) error("tensor %s is not a tuple", what);
    std::vector<int64_t> v;
    v.reserve(o->items.size());
    for (const Object* i : o->items) v.push_back(int_arg(i, what));
    return v;
}

// _rebuild_tensor(storage, offset, size, stride)
// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])
// _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype[, metadata])
Object* Unpickler::rebuild_tensor(const Object& fn, const std::vector<const Object*>& a) {
    const size_t min_args = fn.global == Global::RebuildTensor     ? 4
                            : fn.global == Global::RebuildTensorV2 ? 6
                                                                   : 7;
    const size_t max_args = fn.global == Global::RebuildTensor ? 4 : min_args + 1;
    if (a.size() < min_args || a.size() > max_args)
        error("%s takes %zu arguments, not %zu", fn.text.c_str(), min_args, a.size());
    if (a[0]->kind != Kind::Storage)
        error("%s: the first argument is not a storage", fn.text.c_str());
    TensorInfo t;
    t.storage = a[0]->index;
    t.elem = out_.storages_[t.storage].elem;
    if (fn.global == Global::RebuildTensorV3) {
        if (a[6]->kind != Kind::Global || a[6]->global != Global::DType)
            error("%s: the dtype argument is not a torch dtype", fn.text.c_str());
        t.elem = a[6]->elem;
    }
    t.offset = int_arg(a[1], "storage offset");
    t.size = int_tuple_arg(a[2], "size");
    t.stride = int_tuple_arg(a[3], "stride");
    if (t.size.size() != t.stride.size())
        error("tensor size has %zu dimensions but its stride %zu", t.size.size(), t.stride.size());
    Object* o = make(Kind::Tensor);
    o->index = static_cast<uint32_t>(out_.tensors_.size());
    out_.tensors_.push_back(std::move(t));
    return o;
}

size_t elem_size(ElemType t) {
    switch (t) {
        case ElemType::F64:
        case ElemType::I64:
            return 8;
        case ElemType::F32:
        case ElemType::I32:
            return 4;
        case ElemType::F16:
        case ElemType::BF16:
        case ElemType::I16:
            return 2;
        case ElemType::I8:
        case ElemType::U8:
        case ElemType::Bool:
        case ElemType::F8_E4M3:
        case ElemType::F8_E5M2:
            return 1;
    }
    return 1;
}

const char* elem_name(ElemType t) {
    switch (t) {
        case ElemType::F32:
            return "float32";
        case ElemType::F16:
            return "float16";
        case ElemType::BF16:
            return "bfloat16";
        case ElemType::F64:
            return "float64";
        case ElemType::I64:
            return "int64";
        case ElemType::I32:
            return "int32";
        case ElemType::I16:
            return "int16";
        case ElemType::I8:
            return "int8";
        case ElemType::U8:
            return "uint8";
        case ElemType::Bool:
            return "bool";
        case ElemType::F8_E4M3:
            return "float8_e4m3fn";
        case ElemType::F8_E5M2:
            return "float8_e5m2";
    }
    return "?";
}

Pickle read_pickle(std::span<const uint8_t> data, const std::string& path, const std::string& name,
                   const Limits& limits) {
    return Unpickler(data, path, name, limits).run();
}

}  // namespace sd::pickle
