// PyTorch zip checkpoints (torch.save since 1.6; .ckpt/.pt/.pth): a stored zip whose entries
// sit in one folder, "<folder>/data.pkl" (the pickled object), "<folder>/data/<key>" (one
// per storage, raw little-endian elements), "<folder>/byteorder", "<folder>/version". The
// pickle goes through the restricted unpickler; each tensor becomes a record that views its
// storage entry in the mapped file.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "base/error.h"
#include "base/mapped_file.h"
#include "io/pickle_reader.h"
#include "io/tensor_file.h"
#include "io/zip_reader.h"

namespace sd {
namespace {

using pickle::ElemType;
using pickle::Kind;
using pickle::Object;

constexpr int kMaxNesting = 32;          // dicts inside dicts
constexpr size_t kMaxVisits = 1u << 22;  // dict entries looked at, shared dicts counted each time
constexpr int64_t kMaxElements = 1ll << 50;

struct TypeMap {
    DType dtype;
    RawType raw;
};

TypeMap type_of(ElemType e) {
    switch (e) {
        case ElemType::F32:
            return {DType::F32, RawType::None};
        case ElemType::F16:
            return {DType::F16, RawType::None};
        case ElemType::BF16:
            return {DType::BF16, RawType::None};
        case ElemType::I32:
            return {DType::I32, RawType::None};
        case ElemType::F64:
            return {DType::F32, RawType::F64};
        case ElemType::I64:
            return {DType::I32, RawType::I64};
        case ElemType::I16:
            return {DType::I32, RawType::I16};
        case ElemType::I8:
            return {DType::I32, RawType::I8};
        case ElemType::U8:
            return {DType::I32, RawType::U8};
        case ElemType::Bool:
            return {DType::I32, RawType::Bool};
        case ElemType::F8_E4M3:
            return {DType::F16, RawType::F8_E4M3};
        case ElemType::F8_E5M2:
            return {DType::F16, RawType::F8_E5M2};
    }
    return {DType::F32, RawType::None};
}

// The folder all entries live in, as torch finds it: that of the first entry.
std::string archive_folder(const ZipReader& zip) {
    if (zip.entries().empty()) fail("%s: the zip archive is empty", zip.path().c_str());
    const std::string& first = zip.entries().front().name;
    size_t slash = first.find('/');
    if (slash == std::string::npos || slash == 0) {
        fail("%s: not a PyTorch checkpoint: its first entry '%s' is not inside a folder",
             zip.path().c_str(), first.c_str());
    }
    return first.substr(0, slash + 1);
}

void check_byteorder(const ZipReader& zip, const std::string& folder) {
    const ZipEntry* e = zip.find(folder + "byteorder");
    if (!e) return;  // written since torch 2.1; older files are little-endian
    std::span<const uint8_t> bytes = zip.data(*e);
    std::string order(bytes.begin(), bytes.end());
    if (order == "little") return;
    if (order == "big") {
        fail(
            "%s: the checkpoint was saved on a big-endian machine (byteorder \"big\"); only "
            "little-endian checkpoints are supported",
            zip.path().c_str());
    }
    fail("%s: unknown byteorder \"%.20s\"", zip.path().c_str(), order.c_str());
}

const ZipEntry& find_pickle(const ZipReader& zip, const std::string& folder) {
    if (const ZipEntry* e = zip.find(folder + "data.pkl")) return *e;
    if (zip.find(folder + "constants.pkl")) {
        fail(
            "%s: this is a TorchScript archive (torch.jit.save), which is not supported; save "
            "the model's state_dict with torch.save instead",
            zip.path().c_str());
    }
    fail("%s: not a PyTorch checkpoint: the zip archive has no '%sdata.pkl'", zip.path().c_str(),
         folder.c_str());
}

class CheckpointBuilder {
  public:
    CheckpointBuilder(const ZipReader& zip, std::string folder, const pickle::Pickle& p,
                      TensorFile& out)
        : zip_(zip), folder_(std::move(folder)), pickle_(p), out_(out) {}

    void build();

  private:
    const char* path() const { return zip_.path().c_str(); }
    void collect(const Object& dict, const std::string& prefix, int depth);
    void add_metadata(const Object& dict);
    void add_tensor(const std::string& name, const pickle::TensorInfo& t);
    std::shared_ptr<Storage> storage(const std::string& name, uint32_t index);
    static bool key_text(const Object& key, std::string& text);

    struct Resolved {
        ElemType elem;
        int64_t numel;
        std::shared_ptr<Storage> storage;
    };

    const ZipReader& zip_;
    std::string folder_;
    const pickle::Pickle& pickle_;
    TensorFile& out_;
    std::unordered_map<std::string, Resolved> storages_;  // by key
    std::set<std::string> names_;
    size_t visits_ = 0;
};

void CheckpointBuilder::build() {
    const Object& root = pickle_.root();
    if (root.kind != Kind::Dict)
        fail("%s: the checkpoint holds no dict of tensors at its top level", path());
    add_metadata(root);
    // Training checkpoints (Stable Diffusion's among them) keep the weights under "state_dict".
    for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
        const Object& k = *root.items[i];
        const Object& v = *root.items[i + 1];
        if (k.kind == Kind::String && k.text == "state_dict" && v.kind == Kind::Dict) {
            collect(v, "", 1);
            return;
        }
    }
    collect(root, "", 0);
}

bool CheckpointBuilder::key_text(const Object& key, std::string& text) {
    if (key.kind == Kind::String) {
        text = key.text;
        return true;
    }
    if (key.kind == Kind::Int) {
        text = std::to_string(key.integer);
        return true;
    }
    return false;
}

void CheckpointBuilder::add_metadata(const Object& dict) {
    for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
        std::string key;
        const Object& v = *dict.items[i + 1];
        if (!key_text(*dict.items[i], key)) continue;
        if (v.kind == Kind::Int) out_.metadata[key] = MetadataValue{v.integer};
        if (v.kind == Kind::Bool) out_.metadata[key] = MetadataValue{v.integer != 0};
        if (v.kind == Kind::Float) out_.metadata[key] = MetadataValue{v.real};
        if (v.kind == Kind::String) out_.metadata[key] = MetadataValue{v.text};
    }
}

void CheckpointBuilder::collect(const Object& dict, const std::string& prefix, int depth) {
    if (depth > kMaxNesting) fail("%s: dicts nested more than %d deep", path(), kMaxNesting);
    for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
        if (++visits_ > kMaxVisits)
            fail("%s: the checkpoint's dicts have more than %zu entries", path(), kMaxVisits);
        std::string key;
        if (!key_text(*dict.items[i], key)) continue;
        const Object& v = *dict.items[i + 1];
        if (v.kind == Kind::Tensor) add_tensor(prefix + key, pickle_.tensors()[v.index]);
        if (v.kind == Kind::Dict) collect(v, prefix + key + ".", depth + 1);
    }
}

std::shared_ptr<Storage> CheckpointBuilder::storage(const std::string& name, uint32_t index) {
    const pickle::StorageInfo& s = pickle_.storages()[index];
    auto it = storages_.find(s.key);
    if (it != storages_.end()) {
        if (it->second.elem != s.elem || it->second.numel != s.numel) {
            fail("%s: tensor '%s': storage '%s' is referred to with different types or sizes",
                 path(), name.c_str(), s.key.c_str());
        }
        return it->second.storage;
    }
    const std::string entry_name = folder_ + "data/" + s.key;
    const ZipEntry* e = zip_.find(entry_name);
    if (!e)
        fail("%s: tensor '%s': its storage '%s' is not in the archive", path(), name.c_str(),
             entry_name.c_str());
    const size_t es = pickle::elem_size(s.elem);
    if (static_cast<uint64_t>(s.numel) > e->size / es) {
        fail("%s: tensor '%s': storage '%s' should hold %lld %s elements but has %llu bytes",
             path(), name.c_str(), entry_name.c_str(), (long long)s.numel,
             pickle::elem_name(s.elem), (unsigned long long)e->size);
    }
    auto st = Storage::map(zip_.file(), zip_.data(*e).data(), static_cast<size_t>(s.numel) * es);
    storages_.emplace(s.key, Resolved{s.elem, s.numel, st});
    return st;
}

void CheckpointBuilder::add_tensor(const std::string& name, const pickle::TensorInfo& t) {
    const char* n = name.c_str();
    if (!names_.insert(name).second) fail("%s: tensor '%s' appears twice", path(), n);
    if (t.size.size() > static_cast<size_t>(kMaxDims))
        fail("%s: tensor '%s' has %zu dimensions; at most %d are supported", path(), n,
             t.size.size(), kMaxDims);
    if (t.offset < 0) fail("%s: tensor '%s' has a negative storage offset", path(), n);
    TensorRecord r;
    r.name = name;
    // The product of the dims with zeros counted as ones bounds every stride derived from the
    // shape, empty tensors included.
    __int128 extent = 1;
    bool empty = false;
    for (size_t d = 0; d < t.size.size(); ++d) {
        if (t.size[d] < 0 || t.stride[d] < 0)
            fail("%s: tensor '%s' has a negative size or stride", path(), n);
        extent *= std::max<int64_t>(t.size[d], 1);
        if (extent > kMaxElements) fail("%s: tensor '%s' is too large", path(), n);
        empty = empty || t.size[d] == 0;
        r.shape.push_back(t.size[d]);
        r.strides.push_back(t.stride[d]);
    }
    const __int128 numel = empty ? 0 : extent;
    // The last element reached; with numel bounded no term overflows.
    __int128 last = t.offset;
    for (size_t d = 0; numel > 0 && d < t.size.size(); ++d) {
        last += static_cast<__int128>(t.size[d] - 1) * t.stride[d];
    }
    r.storage = storage(name, t.storage);
    const int64_t capacity = static_cast<int64_t>(r.storage->size() / pickle::elem_size(t.elem));
    if (numel > 0 && last >= capacity) {
        fail("%s: tensor '%s' (%s %s, offset %lld) reaches element %lld of a storage of %lld",
             path(), n, pickle::elem_name(t.elem), r.shape.to_string().c_str(), (long long)t.offset,
             (long long)std::min<__int128>(last, INT64_MAX), (long long)capacity);
    }
    if (numel == 0) r.strides = contiguous_strides(r.shape);
    r.offset = numel == 0 ? 0 : t.offset;
    TypeMap m = type_of(t.elem);
    r.dtype = m.dtype;
    r.raw = m.raw;
    out_.tensors.push_back(std::move(r));
}

}  // namespace

TensorFile read_torch_checkpoint(const std::string& path) {
    ZipReader zip(MappedFile::open(path));
    const std::string folder = archive_folder(zip);
    check_byteorder(zip, folder);
    const ZipEntry& pkl = find_pickle(zip, folder);
    pickle::Pickle p = pickle::read_pickle(zip.checked_data(pkl), path, pkl.name);
    TensorFile out;
    out.path = path;
    out.format = "ckpt";
    CheckpointBuilder(zip, folder, p, out).build();
    return out;
}

}  // namespace sd
