#include "nn/weights.h"

#include <algorithm>
#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "ops/convert.h"

namespace sd {

void WeightPages::add(const Tensor& t) {
    const std::shared_ptr<Storage>& s = t.storage();
    if (!s || !s->file()) return;
    storages_.push_back(s);
    bytes_ += s->size();
}

namespace {
// read_streamed's scratch: one a thread, so contexts generating on their own threads each
// stream through their own buffer.
thread_local std::shared_ptr<Storage> stream_buffer;
}  // namespace

void WeightPages::release() const {
    for (const auto& s : storages_) s->release_pages();
    stream_buffer.reset();  // a model going idle leaves no scratch behind
}

// Residency::Streamed: the weight's bytes read from the file (the page cache) into one
// scratch buffer of the calling thread, reused by every layer's forward (it grows to the
// largest weight), so the mapping's pages never enter RSS and nothing is faulted in and
// dropped again. Layers run one at a time on the calling thread, so one buffer serves them. A
// weight the file does not hold contiguously is used in place, its pages mapped in at once and
// dropped after.
Tensor read_streamed(const Tensor& w) {
    const std::shared_ptr<Storage>& s = w.storage();
    if (!s || !s->file() || !w.is_contiguous()) {
        if (s) s->populate_pages();
        return w;
    }
    std::shared_ptr<Storage>& scratch = stream_buffer;
    // A buffer still held by an earlier result is not overwritten.
    if (!scratch || scratch->size() < w.nbytes() || scratch.use_count() > 1)
        scratch = Storage::allocate(std::max(w.nbytes(), scratch ? scratch->size() : 0));
    std::shared_ptr<Storage> buffer = scratch;
    Tensor copy = Tensor::from_storage(buffer, 0, w.shape(), w.dtype());
    const auto* at = static_cast<const uint8_t*>(w.data_ptr());
    s->file()->read(static_cast<size_t>(at - s->file()->data()), copy.data_ptr(), w.nbytes());
    return copy;
}

Weights::Weights(const ModelFiles& files, std::string prefix, Residency residency)
    : files_(&files), prefix_(std::move(prefix)), report_(std::make_shared<LoadReport>()) {
    report_->residency = residency;
}

Weights Weights::operator[](const std::string& name) const {
    Weights child = *this;
    child.prefix_ = prefix_ + name + ".";
    return child;
}

bool Weights::has(const std::string& name) const {
    return files_->find(prefix_ + name) != nullptr;
}

std::optional<Shape> Weights::shape_of(const std::string& name) const {
    const TensorRecord* r = files_->find(prefix_ + name);
    if (!r) return std::nullopt;
    return r->shape;
}

int64_t Weights::dim_of(const std::string& name, int d, const char* model) const {
    const std::optional<Shape> s = shape_of(name);
    SD_CHECK(s && d >= 0 && static_cast<int>(s->size()) > d,
             "%s under '%s': '%s' is missing or not %d-D", model, prefix_.c_str(), name.c_str(),
             d + 1);
    return (*s)[d];
}

int Weights::count_numbered(const std::string& kind, const std::string& tensor) const {
    int n = 0;
    while (has(kind + "." + std::to_string(n) + "." + tensor)) ++n;
    return n;
}

Tensor Weights::get(const std::string& name, const Shape& shape) const {
    const std::string full = prefix_ + name;
    const TensorRecord* r = files_->find(full);
    if (!r) {
        report_->problems.push_back("missing tensor '" + full + "' " + shape.to_string());
        return Tensor::zeros(shape);
    }
    report_->used.insert(full);
    if (r->shape != shape) {
        report_->problems.push_back("tensor '" + full + "' has shape " + r->shape.to_string() +
                                    ", expected " + shape.to_string());
        return Tensor::zeros(shape);
    }
    Tensor t = r->load();
    if (shape.size() <= 1 && t.dtype() != DType::F32) t = convert(t, DType::F32);
    report_->pages.add(t);
    return t;
}

Tensor Weights::get_optional(const std::string& name, const Shape& shape) const {
    if (!has(name)) return {};
    return get(name, shape);
}

void Weights::skip(const std::string& name) const {
    if (has(name)) report_->used.insert(prefix_ + name);
}

void Weights::skip_all(const std::string& sub) const {
    const std::string start = prefix_ + sub;
    for (const std::string& name : files_->names())
        if (name.compare(0, start.size(), start) == 0) report_->used.insert(name);
}

void Weights::check(const std::string& model_name) const {
    size_t unused = 0;
    for (const std::string& name : files_->names()) {
        if (name.compare(0, prefix_.size(), prefix_) != 0 || report_->used.count(name)) continue;
        ++unused;
        SD_LOG_DEBUG("%s: tensor '%s' is not used", model_name.c_str(), name.c_str());
    }
    if (unused > 0)
        SD_LOG_WARN("%s: %zu tensors of the checkpoint are not used", model_name.c_str(), unused);
    const auto& problems = report_->problems;
    if (problems.empty()) return;
    std::string text;
    for (size_t i = 0; i < problems.size() && i < 12; ++i) text += "\n  " + problems[i];
    if (problems.size() > 12) text += strfmt("\n  ... and %zu more", problems.size() - 12);
    fail("%s cannot be built from %s: %zu problem%s:%s", model_name.c_str(),
         files_->describe_sources().c_str(), problems.size(), problems.size() == 1 ? "" : "s",
         text.c_str());
}

}  // namespace sd
