// safetensors: an 8-byte little-endian header length, a JSON header
//   {"NAME": {"dtype": "F16", "shape": [..], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// and the tensors' bytes, offsets relative to the end of the header. A sharded model is a
// "*.safetensors.index.json" whose "weight_map" names the shard file of each tensor.
#include <algorithm>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "io/json_limits.h"
#include "io/tensor_file.h"

namespace sd {
namespace {

using json = nlohmann::json;

struct StDtype {
    const char* name;
    DType dtype;
    RawType raw;
    size_t size;
};

constexpr StDtype kDtypes[] = {
    {"F32", DType::F32, RawType::None, 4},        {"F16", DType::F16, RawType::None, 2},
    {"BF16", DType::BF16, RawType::None, 2},      {"I32", DType::I32, RawType::None, 4},
    {"F64", DType::F32, RawType::F64, 8},         {"I64", DType::I32, RawType::I64, 8},
    {"I16", DType::I32, RawType::I16, 2},         {"I8", DType::I32, RawType::I8, 1},
    {"U8", DType::I32, RawType::U8, 1},           {"BOOL", DType::I32, RawType::Bool, 1},
    {"F8_E4M3", DType::F16, RawType::F8_E4M3, 1}, {"F8_E5M2", DType::F16, RawType::F8_E5M2, 1},
};

const StDtype* find_dtype(const std::string& name) {
    for (const StDtype& d : kDtypes) {
        if (name == d.name) return &d;
    }
    return nullptr;
}

// The largest header we accept; real ones are well under a megabyte per thousand tensors.
constexpr uint64_t kMaxHeaderBytes = 256ull << 20;

json parse_header(const std::string& path, const char* text, size_t size) {
    check_json_depth(path, text, size, 4);
    // Reject duplicate tensor names: JSON objects keep only the last of equal keys.
    std::set<std::string> keys;
    auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::key && depth == 1) {
            const std::string& key = parsed.get_ref<const std::string&>();
            if (!keys.insert(key).second)
                fail("%s: tensor '%s' appears twice in the header", path.c_str(), key.c_str());
        }
        return true;
    };
    try {
        json header = json::parse(text, text + size, on_event);
        if (!header.is_object())
            fail("%s: the safetensors header is not a JSON object", path.c_str());
        return header;
    } catch (const json::exception& e) {
        fail("%s: malformed safetensors header: %s", path.c_str(), e.what());
    }
}

Shape parse_shape(const std::string& path, const std::string& name, const json& j) {
    if (!j.is_array())
        fail("%s: tensor '%s': \"shape\" is not an array", path.c_str(), name.c_str());
    if (j.size() > static_cast<size_t>(kMaxDims)) {
        fail("%s: tensor '%s' has %zu dimensions; at most %d are supported", path.c_str(),
             name.c_str(), j.size(), kMaxDims);
    }
    Shape shape;
    for (const json& d : j) {
        if (!d.is_number_unsigned()) {
            fail("%s: tensor '%s': shape entry %s is not a non-negative integer", path.c_str(),
                 name.c_str(), d.dump().c_str());
        }
        uint64_t v = d.get<uint64_t>();
        if (v > (1ull << 40))
            fail("%s: tensor '%s': dimension %llu is too large", path.c_str(), name.c_str(),
                 (unsigned long long)v);
        shape.push_back(static_cast<int64_t>(v));
    }
    return shape;
}

void read_metadata(const std::string& path, const json& j, TensorFile& out) {
    if (!j.is_object()) fail("%s: \"__metadata__\" is not an object", path.c_str());
    for (const auto& [key, value] : j.items()) {
        if (!value.is_string()) {
            fail("%s: metadata \"%s\" is not a string", path.c_str(), key.c_str());
        }
        out.metadata[key] = MetadataValue{value.get<std::string>()};
    }
}

struct Span {
    uint64_t begin, end;
    const std::string* name;
};

void check_overlaps(const std::string& path, std::vector<Span> spans) {
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < spans.size(); ++i) {
        if (spans[i].begin < spans[i - 1].end) {
            fail("%s: tensors '%s' and '%s' overlap in the file", path.c_str(),
                 spans[i - 1].name->c_str(), spans[i].name->c_str());
        }
    }
}

}  // namespace

TensorFile read_safetensors(const std::string& path) {
    auto file = MappedFile::open(path);
    const uint8_t* p = file->data();
    const uint64_t size = file->size();
    if (size < 8)
        fail("%s: too short for a safetensors file (%llu bytes)", path.c_str(),
             (unsigned long long)size);
    uint64_t header_len;
    std::memcpy(&header_len, p, 8);
    if (header_len > size - 8) {
        fail(
            "%s: header length %llu runs past the end of the file (%llu bytes); the file is "
            "truncated or not safetensors",
            path.c_str(), (unsigned long long)header_len, (unsigned long long)size);
    }
    if (header_len > kMaxHeaderBytes)
        fail("%s: header of %llu bytes is implausibly large", path.c_str(),
             (unsigned long long)header_len);
    json header = parse_header(path, reinterpret_cast<const char*>(p + 8), header_len);

    TensorFile out;
    out.path = path;
    out.format = "safetensors";
    const uint64_t data_start = 8 + header_len;
    const uint64_t data_size = size - data_start;
    std::vector<Span> spans;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            read_metadata(path, entry, out);
            continue;
        }
        if (name.empty()) fail("%s: a tensor has an empty name", path.c_str());
        if (!entry.is_object())
            fail("%s: tensor '%s' is not described by an object", path.c_str(), name.c_str());
        auto dt = entry.find("dtype");
        auto sh = entry.find("shape");
        auto off = entry.find("data_offsets");
        if (dt == entry.end() || sh == entry.end() || off == entry.end()) {
            fail("%s: tensor '%s' lacks one of \"dtype\", \"shape\", \"data_offsets\"",
                 path.c_str(), name.c_str());
        }
        if (!dt->is_string())
            fail("%s: tensor '%s': \"dtype\" is not a string", path.c_str(), name.c_str());
        const StDtype* d = find_dtype(dt->get<std::string>());
        if (!d)
            fail("%s: tensor '%s' has unknown dtype \"%s\"", path.c_str(), name.c_str(),
                 dt->get<std::string>().c_str());
        Shape shape = parse_shape(path, name, *sh);
        if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
            !(*off)[1].is_number_unsigned()) {
            fail("%s: tensor '%s': \"data_offsets\" is not two non-negative integers", path.c_str(),
                 name.c_str());
        }
        uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
        unsigned __int128 want = static_cast<unsigned __int128>(d->size);
        for (int64_t dim : shape) want *= static_cast<uint64_t>(dim);
        if (begin > end || end > data_size) {
            fail("%s: tensor '%s': data offsets [%llu, %llu) lie outside the %llu data bytes",
                 path.c_str(), name.c_str(), (unsigned long long)begin, (unsigned long long)end,
                 (unsigned long long)data_size);
        }
        if (want != end - begin) {
            fail("%s: tensor '%s': %s %s needs %llu bytes but its offsets hold %llu", path.c_str(),
                 name.c_str(), d->name, shape.to_string().c_str(),
                 want > ~0ull ? ~0ull : (unsigned long long)want,
                 (unsigned long long)(end - begin));
        }
        TensorRecord r;
        r.name = name;
        r.shape = shape;
        r.dtype = d->dtype;
        r.raw = d->raw;
        r.storage = Storage::map(file, p + data_start + begin, end - begin);
        r.strides = contiguous_strides(shape);
        out.tensors.push_back(std::move(r));
    }
    for (const TensorRecord& r : out.tensors) {
        auto begin =
            static_cast<uint64_t>(static_cast<const uint8_t*>(r.storage->data()) - p - data_start);
        if (r.storage->size() > 0) spans.push_back({begin, begin + r.storage->size(), &r.name});
    }
    check_overlaps(path, spans);
    // Keep the order of the file's data, which is the order writers laid tensors out in.
    std::stable_sort(out.tensors.begin(), out.tensors.end(),
                     [](const TensorRecord& a, const TensorRecord& b) {
                         return a.storage->data() < b.storage->data();
                     });
    return out;
}

}  // namespace sd

namespace sd {

TensorFile read_safetensors_index(const std::string& path) {
    auto file = MappedFile::open(path);
    const char* text = reinterpret_cast<const char*>(file->data());
    check_json_depth(path, text, file->size(), 8);
    json index;
    try {
        index = json::parse(text, text + file->size());
    } catch (const json::exception& e) {
        fail("%s: malformed shard index: %s", path.c_str(), e.what());
    }
    auto map = index.find("weight_map");
    if (!index.is_object() || map == index.end() || !map->is_object()) {
        fail("%s: a shard index needs a \"weight_map\" object", path.c_str());
    }
    std::string dir = path.substr(0, path.find_last_of('/') + 1);
    // Shards in first-seen order, each read once.
    std::vector<std::string> shards;
    for (const auto& [name, shard] : map->items()) {
        if (!shard.is_string())
            fail("%s: weight_map entry '%s' is not a file name", path.c_str(), name.c_str());
        std::string s = shard.get<std::string>();
        if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..") {
            fail("%s: shard name \"%s\" must be a plain file name beside the index", path.c_str(),
                 s.c_str());
        }
        if (std::find(shards.begin(), shards.end(), s) == shards.end()) shards.push_back(s);
    }
    TensorFile out;
    out.path = path;
    out.format = "safetensors";
    std::set<std::string> seen;
    for (const std::string& shard : shards) {
        TensorFile part = read_safetensors(dir + shard);
        for (TensorRecord& r : part.tensors) {
            if (!seen.insert(r.name).second)
                fail("%s: tensor '%s' is in more than one shard", path.c_str(), r.name.c_str());
            out.tensors.push_back(std::move(r));
        }
        for (auto& [k, v] : part.metadata) out.metadata.emplace(k, v);
    }
    for (const auto& [name, shard] : map->items()) {
        if (!seen.count(name)) {
            fail("%s: tensor '%s' is listed in shard %s but not found there", path.c_str(),
                 name.c_str(), shard.get<std::string>().c_str());
        }
    }
    return out;
}

}  // namespace sd
