// Reading a tokenizer's vocabulary file whole, with a size limit (a vocabulary is at most a
// few MiB; a huge file given by mistake is refused, not read into memory).
#pragma once

#include <string>
#include <vector>

namespace sd {

// The bytes of `path`; `what` names the kind of file in error messages ("vocab.json").
std::string read_tokenizer_file(const std::string& path, const char* what);

// The places a vocabulary finder searched, one numbered line each ("\n  1. ..."), for its
// error message.
std::string numbered_places(const std::vector<std::string>& searched);

}  // namespace sd
