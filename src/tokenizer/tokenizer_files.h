// Reading a tokenizer's vocabulary file whole, with a size limit (a vocabulary is at most a
// few MiB; a huge file given by mistake is refused, not read into memory).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sd {

// The bytes of `path`; `what` names the kind of file in error messages ("vocab.json").
std::string read_tokenizer_file(const std::string& path, const char* what);

// The places a vocabulary finder searched, one numbered line each ("\n  1. ..."), for its
// error message.
std::string numbered_places(const std::vector<std::string>& searched);

// The lines of a text file (merges.txt), a trailing '\r' removed from each.
std::vector<std::string_view> split_lines(std::string_view text);

// A short, printable piece of untrusted text (a token, a line) for an error message.
std::string printable_excerpt(std::string_view s, size_t max = 48);

// The folders named for vocabularies, in search order: --tokenizer-dir's `tokenizer_dir`,
// then $SD_TOKENIZER_DIR when `use_env`. `try_root(root, label)` returns whether it found a
// vocabulary under root (it records what it searched); places not given are recorded in
// `searched`. Returns whether one try_root succeeded.
bool try_named_tokenizer_dirs(const std::string& tokenizer_dir, bool use_env,
                              std::vector<std::string>& searched,
                              const std::function<bool(const std::string&, const char*)>& try_root);

// Folders a vocabulary sits in near a model file or folder: the folder itself, and the
// diffusers layout's `subfolder` inside it or beside it (text_encoder/../tokenizer).
std::vector<std::filesystem::path> folders_near(const std::string& path, const char* subfolder);

}  // namespace sd
