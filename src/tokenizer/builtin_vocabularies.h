// The vocabularies built into the binary (data/vocabularies: the CLIP and Qwen2 BPE files,
// gzip-compressed, with their licence notes), the last place the vocabulary searches look, as
// the reference program has its vocabularies compiled in.
#pragma once

#include <string>

namespace sd {

struct BuiltinVocabulary {
    std::string vocab_json;   // token -> id
    std::string merges_txt;   // one merge a line, in rank order
    const char* description;  // where it comes from, for the log
};

// The CLIP BPE vocabulary (OpenAI CLIP, MIT), decompressed on each call.
BuiltinVocabulary builtin_clip_vocabulary();
// The Qwen2 vocabulary (Qwen2.5 / Qwen3, Apache-2.0; the special tokens are the tokenizer's).
BuiltinVocabulary builtin_qwen2_vocabulary();

}  // namespace sd
