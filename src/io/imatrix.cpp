#include "io/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "io/tensor_file.h"
#include "io/tensor_writer.h"
#include "ops/conv.h"
#include "tensor/tensor.h"

namespace sd::imatrix {

namespace detail {
std::atomic<bool> g_collecting{false};
}

namespace {

struct Entry {
    std::vector<double> sum_sq;  // per column
    std::vector<int64_t> count;  // rows seen per column
    int64_t ncall = 0;
};

// std::map: entries come out sorted by name, so files are reproducible.
struct Store {
    std::mutex mutex;
    std::map<std::string, Entry> entries;
};

Store& store() {
    static Store s;
    return s;
}

// Limits for reading: no weight matrix of any model here has rows longer than this.
constexpr int32_t kMaxNameLength = 4096;
constexpr int32_t kMaxValues = 1 << 26;

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace

void set_collecting(bool on) {
    detail::g_collecting.store(on, std::memory_order_relaxed);
}

void add(const std::string& name, const double* sum_sq, int64_t cols, int64_t rows) {
    if (cols <= 0 || rows <= 0) return;
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    Entry& e = s.entries[name];
    if (e.sum_sq.empty()) {
        e.sum_sq.assign(static_cast<size_t>(cols), 0.0);
        e.count.assign(static_cast<size_t>(cols), 0);
    } else if (e.sum_sq.size() != static_cast<size_t>(cols)) {
        SD_LOG_WARN("imatrix: '%s' seen with rows of %lld values, earlier %zu; ignored",
                    name.c_str(), static_cast<long long>(cols), e.sum_sq.size());
        return;
    }
    for (int64_t j = 0; j < cols; ++j) {
        e.sum_sq[static_cast<size_t>(j)] += sum_sq[j];
        e.count[static_cast<size_t>(j)] += rows;
    }
    ++e.ncall;
}

void record_linear(const std::string& name, const Tensor& x) {
    if (name.empty() || !x.defined() || x.dim() < 1 || x.numel() == 0) return;
    const int64_t cols = x.size(-1);
    const int64_t rows = x.numel() / cols;
    std::vector<float> v = x.to_vector();
    std::vector<double> sum(static_cast<size_t>(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = v.data() + r * cols;
        for (int64_t j = 0; j < cols; ++j) sum[static_cast<size_t>(j)] += double(row[j]) * row[j];
    }
    add(name, sum.data(), cols, rows);
}

void record_conv2d(const std::string& name, const Tensor& x, const Conv2dOptions& options,
                   int64_t kh, int64_t kw) {
    if (name.empty() || !x.defined() || x.dim() != 4 || x.numel() == 0 || kh <= 0 || kw <= 0)
        return;
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int up = options.upsample2x ? 2 : 1;
    const int64_t HU = H * up, WU = W * up;  // the grid the kernel reads
    const int64_t sh = options.stride_h, sw = options.stride_w;
    if (sh <= 0 || sw <= 0) return;
    const int64_t OH = (HU + 2 * options.pad_h - kh) / sh + 1;
    const int64_t OW = (WU + 2 * options.pad_w - kw) / sw + 1;
    if (OH <= 0 || OW <= 0) return;
    std::vector<float> v = x.to_vector();
    std::vector<double> sum(static_cast<size_t>(C * kh * kw), 0.0);
    std::vector<double> sq(static_cast<size_t>(HU * WU));
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t c = 0; c < C; ++c) {
            const float* plane = v.data() + (b * C + c) * H * W;
            for (int64_t y = 0; y < HU; ++y)
                for (int64_t xx = 0; xx < WU; ++xx) {
                    const double val = plane[(y / up) * W + xx / up];
                    sq[static_cast<size_t>(y * WU + xx)] = val * val;
                }
            for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx) {
                    double acc = 0;
                    for (int64_t oy = 0; oy < OH; ++oy) {
                        const int64_t iy = oy * sh - options.pad_h + ky;
                        if (iy < 0 || iy >= HU) continue;
                        for (int64_t ox = 0; ox < OW; ++ox) {
                            const int64_t ix = ox * sw - options.pad_w + kx;
                            if (ix >= 0 && ix < WU) acc += sq[static_cast<size_t>(iy * WU + ix)];
                        }
                    }
                    sum[static_cast<size_t>((c * kh + ky) * kw + kx)] += acc;
                }
        }
    }
    add(name, sum.data(), C * kh * kw, B * OH * OW);
}

namespace {

using Kept = std::vector<const std::pair<const std::string, Entry>*>;

bool ends_with(const std::string& s, const char* suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Mean square of column j times the entry's ncall: the legacy file's value.
float legacy_value(const Entry& e, size_t j) {
    return static_cast<float>(e.sum_sq[j] / static_cast<double>(e.count[j]) *
                              static_cast<double>(e.ncall));
}

void save_legacy(const std::string& tmp, const Kept& keep, int64_t chunks) {
    File f(std::fopen(tmp.c_str(), "wb"));
    if (!f) fail("save_imatrix: cannot create '%s'", tmp.c_str());
    bool ok = true;
    auto put_i32 = [&](int64_t v) {
        int32_t x = static_cast<int32_t>(v);
        ok = ok && std::fwrite(&x, 4, 1, f.get()) == 1;
    };
    put_i32(static_cast<int64_t>(keep.size()));
    for (const auto* kv : keep) {
        const Entry& e = kv->second;
        put_i32(static_cast<int64_t>(kv->first.size()));
        ok = ok && std::fwrite(kv->first.data(), 1, kv->first.size(), f.get()) == kv->first.size();
        put_i32(e.ncall);
        put_i32(static_cast<int64_t>(e.sum_sq.size()));
        std::vector<float> values(e.sum_sq.size());
        for (size_t j = 0; j < values.size(); ++j) values[j] = legacy_value(e, j);
        ok = ok && std::fwrite(values.data(), 4, values.size(), f.get()) == values.size();
    }
    put_i32(chunks);
    ok = std::fflush(f.get()) == 0 && ok;
    if (!ok) fail("save_imatrix: cannot write '%s'", tmp.c_str());
}

// llama.cpp's GGUF imatrix: per entry "<name>.in_sum2" f32 [1, n] (sums of squares) and
// "<name>.counts" f32 [1, 1] (rows seen); general.type "imatrix", imatrix.chunk_count.
void save_gguf(const std::string& tmp, const Kept& keep, int64_t chunks) {
    std::vector<OutputTensor> out;
    for (const auto* kv : keep) {
        const Entry& e = kv->second;
        const auto n = static_cast<int64_t>(e.sum_sq.size());
        const double rows = static_cast<double>(e.count[0]);
        std::vector<float> sums(e.sum_sq.size());
        for (size_t j = 0; j < sums.size(); ++j)
            sums[j] = static_cast<float>(e.sum_sq[j] / static_cast<double>(e.count[j]) * rows);
        const Tensor in_sum2 = Tensor::from_vector({1, n}, sums);
        const Tensor counts = Tensor::from_vector({1, 1}, {static_cast<float>(rows)});
        out.push_back(
            {kv->first + ".in_sum2", DType::F32, in_sum2.shape(), [in_sum2] { return in_sum2; }});
        out.push_back(
            {kv->first + ".counts", DType::F32, counts.shape(), [counts] { return counts; }});
    }
    std::map<std::string, MetadataValue> meta;
    meta["general.type"] = MetadataValue{std::string("imatrix")};
    meta["imatrix.chunk_count"] = MetadataValue{static_cast<uint64_t>(chunks)};
    meta["imatrix.chunk_size"] = MetadataValue{uint64_t{1}};
    meta["imatrix.datasets"] =
        MetadataValue{MetadataArray{MetadataValue{std::string("generation")}}};
    write_gguf(tmp, out, meta);
}

}  // namespace

size_t save(const std::string& path) {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    Kept keep;
    int64_t chunks = 0;
    for (const auto& kv : s.entries) {
        bool full = !kv.second.count.empty();
        for (int64_t c : kv.second.count) full = full && c > 0;
        if (!full) {
            SD_LOG_WARN("imatrix: '%s' has columns without data; not saved", kv.first.c_str());
            continue;
        }
        keep.push_back(&kv);
        chunks = std::max(chunks, kv.second.ncall);
    }
    if (keep.empty()) fail("save_imatrix: nothing collected to write to '%s'", path.c_str());
    const std::string tmp = path + ".tmp";
    try {
        if (ends_with(path, ".gguf"))
            save_gguf(tmp, keep, chunks);
        else
            save_legacy(tmp, keep, chunks);
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail("save_imatrix: cannot write '%s'", path.c_str());
    }
    SD_LOG_INFO("imatrix: saved %zu entries to '%s'", keep.size(), path.c_str());
    return keep.size();
}

namespace {

std::map<std::string, Entry> read_legacy(const std::string& path) {
    File f(std::fopen(path.c_str(), "rb"));
    if (!f) fail("load_imatrix: cannot open '%s'", path.c_str());
    auto get_i32 = [&](const char* what, int index) {
        int32_t v;
        if (std::fread(&v, 4, 1, f.get()) != 1)
            fail("load_imatrix: '%s' ends inside %s of entry %d", path.c_str(), what, index);
        return v;
    };
    const int32_t n = get_i32("the entry count", 0);
    if (n < 1 || n > 1000000)
        fail("load_imatrix: '%s' is not an imatrix file (entry count %d)", path.c_str(), n);
    std::map<std::string, Entry> read;
    for (int i = 1; i <= n; ++i) {
        const int32_t len = get_i32("the name length", i);
        if (len < 1 || len > kMaxNameLength)
            fail("load_imatrix: '%s': entry %d has a name of %d bytes", path.c_str(), i, len);
        std::string name(static_cast<size_t>(len), '\0');
        if (std::fread(name.data(), 1, name.size(), f.get()) != name.size())
            fail("load_imatrix: '%s' ends inside the name of entry %d", path.c_str(), i);
        const int32_t ncall = get_i32("the call count", i);
        const int32_t nval = get_i32("the value count", i);
        if (ncall < 1 || nval < 1 || nval > kMaxValues)
            fail("load_imatrix: '%s': entry %d ('%s') has %d calls and %d values", path.c_str(), i,
                 name.c_str(), ncall, nval);
        std::vector<float> values(static_cast<size_t>(nval));
        if (std::fread(values.data(), 4, values.size(), f.get()) != values.size())
            fail("load_imatrix: '%s' ends inside the values of entry %d ('%s')", path.c_str(), i,
                 name.c_str());
        Entry& e = read[name];
        if (!e.sum_sq.empty() && e.sum_sq.size() != values.size())
            fail("load_imatrix: '%s': entry '%s' appears twice with different sizes", path.c_str(),
                 name.c_str());
        e.sum_sq.resize(values.size(), 0.0);
        e.count.resize(values.size(), 0);
        for (size_t j = 0; j < values.size(); ++j) {
            if (!std::isfinite(values[j]) || values[j] < 0)
                fail("load_imatrix: '%s': entry '%s' has value %g at column %zu", path.c_str(),
                     name.c_str(), values[j], j);
            e.sum_sq[j] += values[j];  // as saved: mean square * ncall
            e.count[j] += ncall;
        }
        e.ncall += ncall;
    }
    return read;
}

std::map<std::string, Entry> read_gguf_imatrix(const std::string& path) {
    const TensorFile tf = read_gguf(path);
    auto type = tf.metadata.find("general.type");
    const std::string* type_name =
        type == tf.metadata.end() ? nullptr : std::get_if<std::string>(&type->second.value);
    if (!type_name || *type_name != "imatrix")
        fail("load_imatrix: '%s' is a GGUF file but not an imatrix (general.type is %s)",
             path.c_str(), type_name ? type_name->c_str() : "missing");
    int64_t chunks = 1;
    if (auto c = tf.metadata.find("imatrix.chunk_count"); c != tf.metadata.end()) {
        if (auto* u = std::get_if<uint64_t>(&c->second.value)) chunks = static_cast<int64_t>(*u);
        if (auto* i = std::get_if<int64_t>(&c->second.value)) chunks = *i;
    }
    std::map<std::string, Entry> read;
    for (const TensorRecord& r : tf.tensors) {
        if (!ends_with(r.name, ".in_sum2")) continue;
        const std::string name = r.name.substr(0, r.name.size() - 8);
        const TensorRecord* c = tf.find(name + ".counts");
        if (!c)
            fail("load_imatrix: '%s': '%s' has no '%s.counts'", path.c_str(), r.name.c_str(),
                 name.c_str());
        if (r.shape.size() < 1 || r.shape.size() > 2 || c->shape.numel() < 1 ||
            r.shape.numel() % c->shape.numel() != 0 || r.shape.numel() > kMaxValues)
            fail("load_imatrix: '%s': '%s' and its counts have shapes that do not fit",
                 path.c_str(), name.c_str());
        const std::vector<float> sums = r.load().to_vector();
        const std::vector<float> counts = c->load().to_vector();
        const size_t per = sums.size() / counts.size();  // columns per matrix
        Entry& e = read[name];
        e.sum_sq.resize(sums.size());
        e.count.resize(sums.size());
        e.ncall = std::max<int64_t>(chunks, 1);
        for (size_t j = 0; j < sums.size(); ++j) {
            // Counts are numbers of activation rows: whole, at most 2^53 (exact as doubles).
            const float n = counts[j / per];
            if (!std::isfinite(sums[j]) || sums[j] < 0 || !(n >= 0) || n > 0x1p53f ||
                n != std::floor(n))
                fail("load_imatrix: '%s': entry '%s' has sum %g, count %g at column %zu",
                     path.c_str(), name.c_str(), sums[j], n, j);
            // A matrix that saw no input gets importance 1, as llama.cpp's quantizer does.
            e.sum_sq[j] = n > 0 ? sums[j] : 1.0;
            e.count[j] = n > 0 ? static_cast<int64_t>(n) : 1;
        }
    }
    if (read.empty()) fail("load_imatrix: '%s' holds no imatrix entries (*.in_sum2)", path.c_str());
    return read;
}

bool is_gguf_file(const std::string& path) {
    File f(std::fopen(path.c_str(), "rb"));
    char magic[4] = {};
    return f && std::fread(magic, 1, 4, f.get()) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace

size_t load(const std::string& path) {
    std::map<std::string, Entry> read =
        is_gguf_file(path) ? read_gguf_imatrix(path) : read_legacy(path);
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (auto& [name, e] : read) {
        Entry& to = s.entries[name];
        if (!to.sum_sq.empty() && to.sum_sq.size() != e.sum_sq.size()) {
            SD_LOG_WARN("imatrix: '%s' in '%s' has %zu values, the loaded data %zu; replaced",
                        name.c_str(), path.c_str(), e.sum_sq.size(), to.sum_sq.size());
            to = Entry{};
        }
        if (to.sum_sq.empty()) {
            to = std::move(e);
            continue;
        }
        for (size_t j = 0; j < e.sum_sq.size(); ++j) {
            to.sum_sq[j] += e.sum_sq[j];
            to.count[j] += e.count[j];
        }
        to.ncall += e.ncall;
    }
    SD_LOG_INFO("imatrix: loaded %zu entries from '%s'", read.size(), path.c_str());
    return read.size();
}

void clear() {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.entries.clear();
}

size_t entry_count() {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.entries.size();
}

std::vector<float> importance(const std::string& name) {
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.entries.find(name);
    if (it == s.entries.end()) return {};
    const Entry& e = it->second;
    std::vector<float> out(e.sum_sq.size());
    for (size_t j = 0; j < out.size(); ++j)
        out[j] = e.count[j] > 0 ? static_cast<float>(e.sum_sq[j] / static_cast<double>(e.count[j]))
                                : 0.0f;
    return out;
}

}  // namespace sd::imatrix
