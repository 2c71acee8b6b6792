#include "io/model_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/log.h"
#include "io/json_limits.h"

namespace sd {
namespace {

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The weights file of one diffusers component folder, preferring safetensors.
std::string component_weights(const std::string& dir) {
    for (const char* name :
         {"diffusion_pytorch_model.safetensors", "model.safetensors",
          "diffusion_pytorch_model.fp16.safetensors", "model.fp16.safetensors",
          "diffusion_pytorch_model.safetensors.index.json", "model.safetensors.index.json",
          "diffusion_pytorch_model.bin", "pytorch_model.bin"}) {
        std::string path = dir + "/" + name;
        if (exists(path)) return path;
    }
    fail(
        "diffusers folder '%s' has no weights file (diffusion_pytorch_model.safetensors, "
        "model.safetensors, "
        "pytorch_model.bin ...)",
        dir.c_str());
}

}  // namespace

void ModelFiles::add(const std::string& path, ModelRole role) {
    if (role != ModelRole::Checkpoint) role_files_.push_back({role, path});
    if (is_directory(path)) {
        add_diffusers_folder(path);
        return;
    }
    merge(open_tensor_file(path), role);
}

void ModelFiles::add_diffusers_folder(const std::string& dir) {
    std::string index_path = dir + "/model_index.json";
    if (!exists(index_path)) {
        fail("'%s' is a folder without model_index.json; give a model file, or a diffusers folder",
             dir.c_str());
    }
    std::ifstream in(index_path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    check_json_depth(index_path, text.data(), text.size(), 16);
    nlohmann::json index;
    try {
        index = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fail("%s: malformed JSON: %s", index_path.c_str(), e.what());
    }
    if (!index.is_object()) fail("%s: not a JSON object", index_path.c_str());
    // Each subfolder of model_index.json that a role lists, for the role whose marks its
    // names have when several list it (text_encoder_2: SDXL's bigG or FLUX's T5).
    std::vector<std::string> folders;
    for (const ComponentRole& r : component_roles()) {
        for (const char* folder : r.diffusers_folders)
            if (std::find(folders.begin(), folders.end(), folder) == folders.end())
                folders.push_back(folder);
    }
    int added = 0;
    for (const std::string& folder : folders) {
        if (!index.contains(folder) || !is_directory(dir + "/" + folder)) continue;
        std::vector<ModelRole> candidates;
        for (const ComponentRole& r : component_roles()) {
            for (const char* f : r.diffusers_folders)
                if (folder == f) candidates.push_back(r.role);
        }
        TensorFile file = open_tensor_file(component_weights(dir + "/" + folder));
        const ModelRole role = pick_role(candidates, file.tensors);
        SD_LOG_DEBUG("%s: %s/ holds the %s", dir.c_str(), folder.c_str(), model_role_name(role));
        merge(std::move(file), role);
        ++added;
    }
    if (added == 0) {
        std::string listed;
        for (const std::string& folder : folders) listed += (listed.empty() ? "" : ", ") + folder;
        fail("%s: lists none of %s with its folder", index_path.c_str(), listed.c_str());
    }
}

std::string ModelFiles::source_of(const std::string& name) const {
    auto it = source_.find(name);
    return it == source_.end() ? std::string() : it->second;
}

void ModelFiles::merge(TensorFile file, ModelRole role) {
    std::vector<TensorRecord> records = to_canonical_names(std::move(file.tensors), role);
    // A component file replaces that component's tensors from earlier files.
    if (role != ModelRole::Checkpoint && has_role(role)) {
        SD_LOG_INFO("%s: replaces the %s of %s", file.path.c_str(), model_role_name(role),
                    describe_sources().c_str());
        std::erase_if(order_, [&](const std::string& n) {
            if (role_of_name(n) != role) return false;
            tensors_.erase(n);
            source_.erase(n);
            return true;
        });
    }
    std::set<std::string> in_this_file;
    for (TensorRecord& r : records) {
        if (!in_this_file.insert(r.name).second) {
            fail("%s: two tensors map to the name '%s'", file.path.c_str(), r.name.c_str());
        }
        auto it = source_.find(r.name);
        if (it != source_.end()) {
            fail("tensor '%s' is in both '%s' and '%s'", r.name.c_str(), it->second.c_str(),
                 file.path.c_str());
        }
        source_[r.name] = file.path;
        order_.push_back(r.name);
        std::string name = r.name;
        tensors_.emplace(std::move(name), std::move(r));
    }
    file.tensors.clear();
    files_.push_back(std::move(file));
}

const TensorRecord* ModelFiles::find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

const TensorRecord& ModelFiles::get(const std::string& name) const {
    const TensorRecord* r = find(name);
    if (!r) fail("tensor '%s' is missing from %s", name.c_str(), describe_sources().c_str());
    return *r;
}

bool ModelFiles::has_role(ModelRole role) const {
    return std::any_of(order_.begin(), order_.end(),
                       [&](const std::string& n) { return role_of_name(n) == role; });
}

bool ModelFiles::has_prefix(const std::string& prefix) const {
    return std::any_of(order_.begin(), order_.end(), [&](const std::string& n) {
        return n.compare(0, prefix.size(), prefix) == 0;
    });
}

std::string ModelFiles::describe_sources() const {
    if (files_.empty()) return "no model files";
    std::string s;
    for (const TensorFile& f : files_) {
        if (!s.empty()) s += ", ";
        s += "'" + f.path + "'";
    }
    return s;
}

}  // namespace sd
