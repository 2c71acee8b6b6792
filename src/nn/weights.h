// Binding parameters to checkpoint tensors by name. A Weights value is a name prefix over
// the model files ("model.diffusion_model.input_blocks.1.0."); w["in_layers"]["0"] walks
// down the names as the module tree does. Every lookup is recorded, so after a model is
// built one call reports every missing or mis-shaped tensor at once, and the checkpoint's
// tensors that nothing used.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/model_files.h"
#include "tensor/tensor.h"

namespace sd {

// How a model's weights occupy memory. They are views into the mmapped model files, so
// "releasing" them only drops pages from RSS: the page cache keeps them and the next use
// faults them back in (no copy, no disk read while the file stays cached).
enum class Residency {
    Resident,  // pages stay in RSS once touched, until the model is released as a whole
    Streamed,  // each layer reads its weights from the file for its forward, into scratch
               // memory freed after it; the mapping is never touched (--params-backend disk)
};

// The file pages behind a model's weights, to drop from RSS while the model is idle.
class WeightPages {
  public:
    void add(const Tensor& t);
    void release() const;
    size_t bytes() const { return bytes_; }  // of file-backed weights

  private:
    std::vector<std::shared_ptr<Storage>> storages_;
    size_t bytes_ = 0;
};

// Residency::Streamed: the weight read from its file into a scratch buffer that every call
// reuses (so only one streamed weight is alive at a time: use the result before the next
// call); weights not held contiguously in a file come back as they are.
Tensor read_streamed(const Tensor& weight);

struct LoadReport {
    std::set<std::string> used;
    std::vector<std::string> problems;  // missing or mis-shaped, with the reason
    WeightPages pages;
    Residency residency = Residency::Resident;
};

class Weights {
  public:
    Weights(const ModelFiles& files, std::string prefix, Residency residency = Residency::Resident);

    // The child scope "prefix + name + '.'".
    Weights operator[](const std::string& name) const;
    Weights operator[](int index) const { return (*this)[std::to_string(index)]; }
    const std::string& prefix() const { return prefix_; }
    Residency residency() const { return report_->residency; }
    // The pages of every tensor bound so far under this scope's root.
    const WeightPages& pages() const { return report_->pages; }

    bool has(const std::string& name) const;
    std::optional<Shape> shape_of(const std::string& name) const;
    // Size `d` of the tensor `name`; throws naming `model`, the tensor and this scope when it is
    // missing or has fewer dimensions (for reading a configuration from the weights).
    int64_t dim_of(const std::string& name, int d, const char* model) const;
    // How many numbered children `kind`.0, `kind`.1, ... have the tensor `tensor` (a model's
    // depth from its block names).
    int count_numbered(const std::string& kind, const std::string& tensor) const;

    // The tensor `prefix + name`, which must have `shape`. Weight matrices keep the file's
    // dtype (the kernels read any); 1-D parameters (biases, norm scales) come as f32. A
    // missing or mis-shaped tensor is recorded and an empty placeholder of the right shape
    // returned, so the whole model is checked before check() reports.
    Tensor get(const std::string& name, const Shape& shape) const;
    // Same, but an absent tensor is no problem: returns an undefined tensor.
    Tensor get_optional(const std::string& name, const Shape& shape) const;

    // Marks `name`, when the files have it, as knowingly left unread: check() does not count
    // it as unused.
    void skip(const std::string& name) const;
    // The same for every tensor whose name starts with `sub` (a part another model reads).
    void skip_all(const std::string& sub) const;

    // Throws one sd::Error listing every problem recorded under this scope's root; logs
    // how many of the prefix's tensors went unused (names at debug level).
    void check(const std::string& model_name) const;

  private:
    const ModelFiles* files_;
    std::string prefix_;
    std::shared_ptr<LoadReport> report_;
};

}  // namespace sd
