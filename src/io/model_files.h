// Every file given on the command line (-m, --diffusion-model, --vae, --clip_l, ...) merged
// into one namespace (see name_conversion.h). A component file replaces what an earlier
// file held for that component, so `-m model.safetensors --vae better_vae.safetensors` uses
// the separate VAE. A diffusers folder adds the subfolders component_roles.h lists (unet/ or
// transformer/, vae/, text_encoder/ ...).
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/name_conversion.h"
#include "io/tensor_file.h"

namespace sd {

// A file given for one component role (--vae FILE ...): the loader checks these against the
// roles the detected family takes.
struct RoleFile {
    ModelRole role;
    std::string path;
};

class ModelFiles {
  public:
    // Opens `path` (any format, or a diffusers folder) and merges its tensors.
    void add(const std::string& path, ModelRole role);

    const TensorRecord* find(const std::string& name) const;
    // The tensor, or an sd::Error naming it and the files searched.
    const TensorRecord& get(const std::string& name) const;
    bool has_prefix(const std::string& prefix) const;
    // Whether a tensor belongs to `role` (role_of_name: the longest canonical prefix).
    bool has_role(ModelRole role) const;
    // The files added for a component role, in order (-m files are not).
    const std::vector<RoleFile>& role_files() const { return role_files_; }
    // Canonical names in the order they were added.
    const std::vector<std::string>& names() const { return order_; }
    size_t size() const { return order_.size(); }
    // The opened files (their metadata: GGUF keys, a tokenizer vocabulary ...).
    const std::vector<TensorFile>& files() const { return files_; }
    // Paths of the files added, for messages.
    std::string describe_sources() const;
    // The path of the file that holds tensor `name`, or "" when none does.
    std::string source_of(const std::string& name) const;

  private:
    void merge(TensorFile file, ModelRole role);
    void add_diffusers_folder(const std::string& dir);

    std::vector<TensorFile> files_;  // kept for their metadata; records moved out
    std::unordered_map<std::string, TensorRecord> tensors_;
    std::unordered_map<std::string, std::string> source_;  // name -> file path
    std::vector<std::string> order_;
    std::vector<RoleFile> role_files_;
};

}  // namespace sd
