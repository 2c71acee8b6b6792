#include "io/tensor_writer.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/file_output.h"
#include "io/gguf_format.h"

namespace sd {
namespace {

void check_names(const std::string& path, const std::vector<OutputTensor>& tensors) {
    std::set<std::string> names;
    for (const OutputTensor& t : tensors) {
        if (t.name.empty()) fail("%s: cannot write a tensor without a name", path.c_str());
        if (!names.insert(t.name).second)
            fail("%s: tensor '%s' given twice", path.c_str(), t.name.c_str());
    }
}

// Produces the tensor and checks it is what the header promised.
Tensor produce(const std::string& path, const OutputTensor& t) {
    Tensor data = t.data();
    if (!data.defined() || data.dtype() != t.dtype || data.shape() != t.shape) {
        fail("%s: tensor '%s' came out as %s, not %s%s", path.c_str(), t.name.c_str(),
             data.describe().c_str(), dtype_name(t.dtype), t.shape.to_string().c_str());
    }
    return data.contiguous();
}

const char* safetensors_dtype(DType d) {
    switch (d) {
        case DType::F32:
            return "F32";
        case DType::F16:
            return "F16";
        case DType::BF16:
            return "BF16";
        case DType::I32:
            return "I32";
        default:
            return nullptr;
    }
}

void write_gguf_string(FileOutput& out, const std::string& s) {
    out.write_value<uint64_t>(s.size());
    out.write(s.data(), s.size());
}

GgufValueType gguf_type_of(const MetadataValue& v) {
    struct Visitor {
        GgufValueType operator()(int64_t) const { return GgufValueType::I64; }
        GgufValueType operator()(uint64_t) const { return GgufValueType::U64; }
        GgufValueType operator()(double) const { return GgufValueType::F64; }
        GgufValueType operator()(bool) const { return GgufValueType::Bool; }
        GgufValueType operator()(const std::string&) const { return GgufValueType::String; }
        GgufValueType operator()(const MetadataArray&) const { return GgufValueType::Array; }
    };
    return std::visit(Visitor{}, v.value);
}

// Integer and float metadata are written 32-bit when they fit, as GGUF tools write them.
void write_gguf_value(FileOutput& out, const MetadataValue& v, bool with_type);

GgufValueType written_type(const MetadataValue& v) {
    if (auto* u = std::get_if<uint64_t>(&v.value))
        return *u <= UINT32_MAX ? GgufValueType::U32 : GgufValueType::U64;
    if (auto* i = std::get_if<int64_t>(&v.value)) {
        return (*i >= INT32_MIN && *i <= INT32_MAX) ? GgufValueType::I32 : GgufValueType::I64;
    }
    if (std::holds_alternative<double>(v.value)) return GgufValueType::F32;
    return gguf_type_of(v);
}

void write_gguf_value(FileOutput& out, const MetadataValue& v, bool with_type) {
    GgufValueType type = written_type(v);
    if (with_type) out.write_value<uint32_t>(static_cast<uint32_t>(type));
    switch (type) {
        case GgufValueType::U32:
            out.write_value<uint32_t>(static_cast<uint32_t>(std::get<uint64_t>(v.value)));
            break;
        case GgufValueType::U64:
            out.write_value<uint64_t>(std::get<uint64_t>(v.value));
            break;
        case GgufValueType::I32:
            out.write_value<int32_t>(static_cast<int32_t>(std::get<int64_t>(v.value)));
            break;
        case GgufValueType::I64:
            out.write_value<int64_t>(std::get<int64_t>(v.value));
            break;
        case GgufValueType::F32:
            out.write_value<float>(static_cast<float>(std::get<double>(v.value)));
            break;
        case GgufValueType::Bool:
            out.write_value<uint8_t>(std::get<bool>(v.value) ? 1 : 0);
            break;
        case GgufValueType::String:
            write_gguf_string(out, std::get<std::string>(v.value));
            break;
        case GgufValueType::Array: {
            const MetadataArray& a = std::get<MetadataArray>(v.value);
            // An array has one element type: that of its first element (u32 for an empty one).
            GgufValueType elem = a.empty() ? GgufValueType::U32 : written_type(a[0]);
            for (const MetadataValue& e : a) {
                if (written_type(e) != elem) fail("GGUF metadata arrays must hold one type");
            }
            out.write_value<uint32_t>(static_cast<uint32_t>(elem));
            out.write_value<uint64_t>(a.size());
            for (const MetadataValue& e : a) write_gguf_value(out, e, false);
            break;
        }
        default:
            fail("unsupported GGUF metadata type");
    }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<OutputTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    check_names(path, tensors);
    nlohmann::ordered_json header;
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const OutputTensor& t : tensors) {
        const char* dt = safetensors_dtype(t.dtype);
        if (!dt) {
            fail(
                "%s: safetensors cannot hold %s tensors ('%s'); write a .gguf file for quantized "
                "types",
                path.c_str(), dtype_name(t.dtype), t.name.c_str());
        }
        uint64_t bytes = row_bytes(t.dtype, t.shape.numel());
        header[t.name] = {{"dtype", dt},
                          {"shape", t.shape.to_vector()},
                          {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned
    FileOutput out(path);
    out.write_value<uint64_t>(text.size());
    out.write(text.data(), text.size());
    for (const OutputTensor& t : tensors) {
        Tensor data = produce(path, t);
        out.write(data.data_ptr(), data.nbytes());
    }
    out.commit();
}

void write_gguf(const std::string& path, const std::vector<OutputTensor>& tensors,
                const std::map<std::string, MetadataValue>& metadata, uint64_t alignment) {
    check_names(path, tensors);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        fail("%s: GGUF alignment must be a power of two", path.c_str());
    std::map<std::string, MetadataValue> kv = metadata;
    if (alignment != kGgufDefaultAlignment)
        kv["general.alignment"] = MetadataValue{uint64_t{alignment}};
    FileOutput out(path);
    out.write("GGUF", 4);
    out.write_value<uint32_t>(kGgufVersion);
    out.write_value<uint64_t>(tensors.size());
    out.write_value<uint64_t>(kv.size());
    for (const auto& [key, value] : kv) {
        write_gguf_string(out, key);
        write_gguf_value(out, value, true);
    }
    uint64_t offset = 0;
    for (const OutputTensor& t : tensors) {
        const int64_t inner = t.shape.size() ? t.shape[t.shape.size() - 1] : 1;
        if (inner % block_size(t.dtype) != 0) {
            fail("%s: tensor '%s' %s cannot be %s: its rows are not whole blocks of %lld",
                 path.c_str(), t.name.c_str(), t.shape.to_string().c_str(), dtype_name(t.dtype),
                 (long long)block_size(t.dtype));
        }
        write_gguf_string(out, t.name);
        int nd = std::max(t.shape.size(), 1);
        out.write_value<uint32_t>(static_cast<uint32_t>(nd));
        if (t.shape.size() == 0) out.write_value<uint64_t>(1);
        for (int i = t.shape.size() - 1; i >= 0; --i)
            out.write_value<uint64_t>(static_cast<uint64_t>(t.shape[i]));
        out.write_value<uint32_t>(static_cast<uint32_t>(t.dtype));
        out.write_value<uint64_t>(offset);
        uint64_t bytes = row_bytes(t.dtype, t.shape.numel());
        offset += (bytes + alignment - 1) / alignment * alignment;
    }
    out.write_zeros((alignment - out.position() % alignment) % alignment);
    for (const OutputTensor& t : tensors) {
        Tensor data = produce(path, t);
        out.write(data.data_ptr(), data.nbytes());
        out.write_zeros((alignment - data.nbytes() % alignment) % alignment);
    }
    out.commit();
}

}  // namespace sd
