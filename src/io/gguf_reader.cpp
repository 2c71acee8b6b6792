// GGUF v2/v3: "GGUF", version, tensor count, metadata count; key/value pairs with typed
// values (scalars, strings, nested arrays); tensor infos (name, dims innermost first, type,
// offset); then, at the next multiple of general.alignment (default 32), the tensor data.
// Version 1 used 32-bit counts and lengths and is not read.
#include <algorithm>
#include <cstring>
#include <set>

#include "base/error.h"
#include "base/mapped_file.h"
#include "io/gguf_format.h"
#include "io/tensor_file.h"

namespace sd {
namespace {

// Bounds-checked little-endian reads over the mapped file.
class Cursor {
  public:
    Cursor(const std::string& path, const uint8_t* data, size_t size)
        : path_(path), data_(data), size_(size) {}

    size_t position() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    template <class T>
    T read(const char* what) {
        if (remaining() < sizeof(T))
            fail("%s: truncated while reading %s at byte %zu", path_.c_str(), what, pos_);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string(const char* what) {
        uint64_t len = read<uint64_t>(what);
        if (len > remaining()) {
            fail("%s: %s at byte %zu claims %llu bytes but only %zu remain", path_.c_str(), what,
                 pos_, (unsigned long long)len, remaining());
        }
        std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
        pos_ += len;
        return s;
    }

    const std::string& path() const { return path_; }

  private:
    const std::string& path_;
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

MetadataValue read_value(Cursor& c, uint32_t type, const std::string& key, int depth);

// The fewest bytes one value of `type` takes in the file (a string its length, an array
// its type and count); 1 for types read_value rejects anyway.
uint64_t min_value_bytes(uint32_t type) {
    switch (static_cast<GgufValueType>(type)) {
        case GgufValueType::U16:
        case GgufValueType::I16:
            return 2;
        case GgufValueType::U32:
        case GgufValueType::I32:
        case GgufValueType::F32:
            return 4;
        case GgufValueType::U64:
        case GgufValueType::I64:
        case GgufValueType::F64:
        case GgufValueType::String:
            return 8;
        case GgufValueType::Array:
            return 12;
        default:
            return 1;
    }
}

MetadataValue read_array(Cursor& c, const std::string& key, int depth) {
    if (depth > 4) fail("%s: metadata '%s' nests arrays too deeply", c.path().c_str(), key.c_str());
    uint32_t elem_type = c.read<uint32_t>("array type");
    uint64_t count = c.read<uint64_t>("array length");
    // A count whose smallest possible values would not fit in the bytes left is a lie.
    if (count > c.remaining() / min_value_bytes(elem_type)) {
        fail("%s: metadata '%s': array of %llu values is longer than the file", c.path().c_str(),
             key.c_str(), (unsigned long long)count);
    }
    MetadataArray values;
    // Grown as values are read: a value in memory is larger than in the file.
    values.reserve(std::min<uint64_t>(count, 4096));
    for (uint64_t i = 0; i < count; ++i) values.push_back(read_value(c, elem_type, key, depth + 1));
    return MetadataValue{std::move(values)};
}

MetadataValue read_value(Cursor& c, uint32_t type, const std::string& key, int depth) {
    switch (static_cast<GgufValueType>(type)) {
        case GgufValueType::U8:
            return {uint64_t{c.read<uint8_t>("u8")}};
        case GgufValueType::I8:
            return {int64_t{c.read<int8_t>("i8")}};
        case GgufValueType::U16:
            return {uint64_t{c.read<uint16_t>("u16")}};
        case GgufValueType::I16:
            return {int64_t{c.read<int16_t>("i16")}};
        case GgufValueType::U32:
            return {uint64_t{c.read<uint32_t>("u32")}};
        case GgufValueType::I32:
            return {int64_t{c.read<int32_t>("i32")}};
        case GgufValueType::U64:
            return {c.read<uint64_t>("u64")};
        case GgufValueType::I64:
            return {c.read<int64_t>("i64")};
        case GgufValueType::F32:
            return {double{c.read<float>("f32")}};
        case GgufValueType::F64:
            return {c.read<double>("f64")};
        case GgufValueType::Bool: {
            uint8_t b = c.read<uint8_t>("bool");
            if (b > 1) fail("%s: metadata '%s': bool value %u", c.path().c_str(), key.c_str(), b);
            return {b == 1};
        }
        case GgufValueType::String:
            return {c.read_string("string value")};
        case GgufValueType::Array:
            return read_array(c, key, depth);
    }
    fail("%s: metadata '%s' has unknown value type %u", c.path().c_str(), key.c_str(), type);
}

uint64_t alignment_of(const TensorFile& out) {
    auto it = out.metadata.find("general.alignment");
    if (it == out.metadata.end()) return 32;
    const uint64_t* v = std::get_if<uint64_t>(&it->second.value);
    const int64_t* s = std::get_if<int64_t>(&it->second.value);
    uint64_t a = v ? *v : (s && *s > 0 ? static_cast<uint64_t>(*s) : 0);
    if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 20)) {
        fail("%s: general.alignment must be a power of two up to 1 MiB", out.path.c_str());
    }
    return a;
}

struct PendingTensor {
    TensorRecord record;
    uint64_t offset;
    uint64_t bytes;
};

PendingTensor read_tensor_info(Cursor& c) {
    PendingTensor t;
    t.record.name = c.read_string("tensor name");
    const std::string& name = t.record.name;
    if (name.empty()) fail("%s: a tensor has an empty name", c.path().c_str());
    uint32_t n_dims = c.read<uint32_t>("tensor dims");
    if (n_dims == 0 || n_dims > static_cast<uint32_t>(kMaxDims)) {
        fail("%s: tensor '%s' has %u dimensions (1 to %d supported)", c.path().c_str(),
             name.c_str(), n_dims, kMaxDims);
    }
    uint64_t ne[kMaxDims];
    for (uint32_t i = 0; i < n_dims; ++i) ne[i] = c.read<uint64_t>("tensor dim");
    uint32_t type = c.read<uint32_t>("tensor type");
    t.offset = c.read<uint64_t>("tensor offset");
    auto dtype = dtype_from_gguf_id(type);
    if (!dtype)
        fail("%s: tensor '%s' has GGUF type %u, which this program does not support",
             c.path().c_str(), name.c_str(), type);
    t.record.dtype = *dtype;
    // GGUF lists dimensions innermost first; ours are outermost first.
    unsigned __int128 count = 1;
    for (int i = static_cast<int>(n_dims) - 1; i >= 0; --i) {
        if (ne[i] > (1ull << 40))
            fail("%s: tensor '%s': dimension %llu is too large", c.path().c_str(), name.c_str(),
                 (unsigned long long)ne[i]);
        t.record.shape.push_back(static_cast<int64_t>(ne[i]));
        count *= ne[i];
    }
    if (count >> 50) fail("%s: tensor '%s' is too large", c.path().c_str(), name.c_str());
    int64_t block = block_size(*dtype);
    if (static_cast<int64_t>(ne[0]) % block != 0) {
        fail("%s: tensor '%s' of type %s: row length %llu is not a multiple of %lld",
             c.path().c_str(), name.c_str(), dtype_name(*dtype), (unsigned long long)ne[0],
             (long long)block);
    }
    t.bytes = row_bytes(*dtype, static_cast<int64_t>(count));
    t.record.strides = contiguous_strides(t.record.shape);
    return t;
}

}  // namespace

TensorFile read_gguf(const std::string& path) {
    auto file = MappedFile::open(path);
    Cursor c(path, file->data(), file->size());
    if (file->size() < 4 || std::memcmp(file->data(), "GGUF", 4) != 0)
        fail("%s: not a GGUF file", path.c_str());
    c.read<uint32_t>("magic");
    uint32_t version = c.read<uint32_t>("version");
    if (version != 2 && version != 3)
        fail("%s: GGUF version %u is not supported (2 and 3 are)", path.c_str(), version);
    uint64_t n_tensors = c.read<uint64_t>("tensor count");
    uint64_t n_kv = c.read<uint64_t>("metadata count");
    // Each key/value takes at least 13 bytes and each tensor info at least 28.
    if (n_kv > c.remaining() / 13 || n_tensors > c.remaining() / 28) {
        fail("%s: header claims %llu metadata entries and %llu tensors, more than the file holds",
             path.c_str(), (unsigned long long)n_kv, (unsigned long long)n_tensors);
    }
    TensorFile out;
    out.path = path;
    out.format = "gguf";
    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.read_string("metadata key");
        uint32_t type = c.read<uint32_t>("metadata type");
        MetadataValue value = read_value(c, type, key, 0);
        if (!out.metadata.emplace(key, std::move(value)).second)
            fail("%s: metadata key '%s' appears twice", path.c_str(), key.c_str());
    }
    std::vector<PendingTensor> pending;
    std::set<std::string> names;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        pending.push_back(read_tensor_info(c));
        if (!names.insert(pending.back().record.name).second) {
            fail("%s: tensor '%s' appears twice", path.c_str(), pending.back().record.name.c_str());
        }
    }
    uint64_t align = alignment_of(out);
    uint64_t data_start = (c.position() + align - 1) / align * align;
    uint64_t data_size = data_start <= file->size() ? file->size() - data_start : 0;
    std::vector<std::pair<uint64_t, const PendingTensor*>> spans;
    for (const PendingTensor& t : pending) {
        if (t.offset % align != 0) {
            fail("%s: tensor '%s' offset %llu is not a multiple of the alignment %llu",
                 path.c_str(), t.record.name.c_str(), (unsigned long long)t.offset,
                 (unsigned long long)align);
        }
        if (t.offset > data_size || t.bytes > data_size - t.offset) {
            fail(
                "%s: tensor '%s' (%llu bytes at offset %llu) runs past the end of the file; the "
                "file is truncated?",
                path.c_str(), t.record.name.c_str(), (unsigned long long)t.bytes,
                (unsigned long long)t.offset);
        }
        if (t.bytes > 0) spans.push_back({t.offset, &t});
    }
    std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (size_t i = 1; i < spans.size(); ++i) {
        const PendingTensor* prev = spans[i - 1].second;
        if (spans[i].first < prev->offset + prev->bytes) {
            fail("%s: tensors '%s' and '%s' overlap in the file", path.c_str(),
                 prev->record.name.c_str(), spans[i].second->record.name.c_str());
        }
    }
    for (PendingTensor& t : pending) {
        t.record.storage = Storage::map(file, file->data() + data_start + t.offset, t.bytes);
        out.tensors.push_back(std::move(t.record));
    }
    return out;
}

}  // namespace sd
