#include "io/tensor_file.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tensor/half.h"

namespace sd {
namespace {

size_t raw_size(RawType raw) {
    switch (raw) {
        case RawType::F64:
        case RawType::I64:
            return 8;
        case RawType::I16:
            return 2;
        case RawType::I8:
        case RawType::U8:
        case RawType::Bool:
        case RawType::F8_E4M3:
        case RawType::F8_E5M2:
            return 1;
        case RawType::None:
            break;
    }
    return 0;
}

// f8 e4m3fn (no infinities; S.1111.111 is NaN) and e5m2 (IEEE-like) to f16, both exact.
uint16_t f8_e4m3_to_f16(uint8_t v) {
    uint16_t sign = static_cast<uint16_t>((v & 0x80) << 8);
    int exp = (v >> 3) & 0xf, mant = v & 0x7;
    if (exp == 0xf && mant == 0x7) return sign | 0x7e00;
    float f = exp == 0 ? std::ldexp(static_cast<float>(mant), -9)
                       : std::ldexp(1.0f + static_cast<float>(mant) / 8.0f, exp - 7);
    return sign | f32_to_f16(f);
}
uint16_t f8_e5m2_to_f16(uint8_t v) {
    return static_cast<uint16_t>(v) << 8;
}

// Reads element i of a raw type as a double (integers exactly up to 2^53).
template <class T>
T read_as(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

Tensor convert_raw(const TensorRecord& r) {
    // Gather the raw elements in logical order (the stored layout may be strided).
    const size_t es = raw_size(r.raw);
    const int64_t n = r.shape.numel();
    Tensor out = Tensor::empty(r.shape, r.dtype);
    const auto* base = static_cast<const uint8_t*>(r.storage->data());
    const int nd = r.shape.size();
    std::vector<int64_t> idx(nd, 0);
    for (int64_t i = 0; i < n; ++i) {
        int64_t off = r.offset;
        for (int d = 0; d < nd; ++d) off += idx[d] * r.strides[d];
        const uint8_t* p = base + off * static_cast<int64_t>(es);
        switch (r.raw) {
            case RawType::F64:
                out.data<float>()[i] = static_cast<float>(read_as<double>(p));
                break;
            case RawType::I64:
                out.data<int32_t>()[i] = static_cast<int32_t>(read_as<int64_t>(p));
                break;
            case RawType::I16:
                out.data<int32_t>()[i] = read_as<int16_t>(p);
                break;
            case RawType::I8:
                out.data<int32_t>()[i] = read_as<int8_t>(p);
                break;
            case RawType::U8:
                out.data<int32_t>()[i] = *p;
                break;
            case RawType::Bool:
                out.data<int32_t>()[i] = *p != 0;
                break;
            case RawType::F8_E4M3:
                out.data<uint16_t>()[i] = f8_e4m3_to_f16(*p);
                break;
            case RawType::F8_E5M2:
                out.data<uint16_t>()[i] = f8_e5m2_to_f16(*p);
                break;
            case RawType::None:
                break;
        }
        for (int d = nd - 1; d >= 0; --d) {
            if (++idx[d] < r.shape[d]) break;
            idx[d] = 0;
        }
    }
    return out;
}

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

Tensor TensorRecord::load() const {
    if (raw != RawType::None) return convert_raw(*this);
    const DTypeInfo& info = dtype_info(dtype);
    const size_t es = info.type_size;
    const auto* first = static_cast<const uint8_t*>(storage->data()) + row_bytes(dtype, offset);
    // Kernels read whole elements: bytes not aligned to the element size get copied.
    if (!info.is_quantized && reinterpret_cast<uintptr_t>(first) % es != 0) {
        auto aligned = Storage::allocate(storage->size());
        std::memcpy(aligned->data(), storage->data(), storage->size());
        TensorRecord copy = *this;
        copy.storage = aligned;
        return copy.load();
    }
    if (strides == contiguous_strides(shape)) {
        return Tensor::from_storage(storage, row_bytes(dtype, offset), shape, dtype);
    }
    int64_t capacity = static_cast<int64_t>(storage->size() / es);
    return Tensor::from_storage(storage, 0, {capacity}, dtype).as_strided(shape, strides, offset);
}

size_t TensorRecord::file_bytes() const {
    if (raw != RawType::None) return static_cast<size_t>(shape.numel()) * raw_size(raw);
    return row_bytes(dtype, shape.numel());
}

std::string MetadataValue::to_string() const {
    struct Visitor {
        std::string operator()(int64_t v) const { return std::to_string(v); }
        std::string operator()(uint64_t v) const { return std::to_string(v); }
        std::string operator()(double v) const { return strfmt("%g", v); }
        std::string operator()(bool v) const { return v ? "true" : "false"; }
        std::string operator()(const std::string& v) const {
            return v.size() > 60 ? "\"" + v.substr(0, 57) + "...\"" : "\"" + v + "\"";
        }
        std::string operator()(const MetadataArray& v) const {
            return strfmt("[%zu values]", v.size());
        }
    };
    return std::visit(Visitor{}, value);
}

const TensorRecord* TensorFile::find(const std::string& name) const {
    for (const TensorRecord& r : tensors) {
        if (r.name == name) return &r;
    }
    return nullptr;
}

TensorFile open_tensor_file(const std::string& path) {
    if (is_directory(path))
        fail("'%s' is a folder; diffusers folders are not supported yet", path.c_str());
    if (ends_with(path, ".safetensors.index.json")) return read_safetensors_index(path);
    auto file = MappedFile::open(path);
    const uint8_t* p = file->data();
    size_t n = file->size();
    if (n >= 4 && std::memcmp(p, "GGUF", 4) == 0) return read_gguf(path);
    if (n >= 4 && std::memcmp(p, "PK\x03\x04", 4) == 0) return read_torch_checkpoint(path);
    if (n >= 9 && p[8] == '{') return read_safetensors(path);
    fail(
        "'%s' is not a model file this program reads (safetensors, GGUF, PyTorch .ckpt/.pt/.pth, "
        "diffusers folder): its first bytes match none of them",
        path.c_str());
}

}  // namespace sd
