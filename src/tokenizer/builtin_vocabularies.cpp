#include "tokenizer/builtin_vocabularies.h"

#include <zlib.h>

#include <cstdint>

#include "base/error.h"

// The bytes of each data/vocabularies/NAME.gz, embedded by cmake/builtin_vocabularies.S.in.
extern "C" {
extern const unsigned char sd_vocab_clip_vocab_json[], sd_vocab_clip_vocab_json_end[];
extern const unsigned char sd_vocab_clip_merges_txt[], sd_vocab_clip_merges_txt_end[];
extern const unsigned char sd_vocab_qwen2_vocab_json[], sd_vocab_qwen2_vocab_json_end[];
extern const unsigned char sd_vocab_qwen2_merges_txt[], sd_vocab_qwen2_merges_txt_end[];
}

namespace sd {
namespace {

constexpr size_t kMaxBytes = 64u << 20;  // a vocabulary file's limit (tokenizer_files.h)

// The gunzipped bytes of [begin, end).
std::string gunzip(const unsigned char* begin, const unsigned char* end, const char* name) {
    z_stream z{};
    SD_CHECK(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK, "built-in %s: zlib init failed", name);
    z.next_in = const_cast<unsigned char*>(begin);
    z.avail_in = static_cast<uInt>(end - begin);
    std::string out;
    char buf[1 << 16];
    int rc = Z_OK;
    while (rc == Z_OK) {
        z.next_out = reinterpret_cast<Bytef*>(buf);
        z.avail_out = sizeof buf;
        rc = inflate(&z, Z_NO_FLUSH);
        out.append(buf, sizeof buf - z.avail_out);
        if (out.size() > kMaxBytes) rc = Z_BUF_ERROR;
    }
    inflateEnd(&z);
    SD_CHECK(rc == Z_STREAM_END, "built-in %s: the embedded data is damaged (zlib %d)", name, rc);
    return out;
}

}  // namespace

BuiltinVocabulary builtin_clip_vocabulary() {
    return {gunzip(sd_vocab_clip_vocab_json, sd_vocab_clip_vocab_json_end, "clip vocab.json"),
            gunzip(sd_vocab_clip_merges_txt, sd_vocab_clip_merges_txt_end, "clip merges.txt"),
            "built-in CLIP vocabulary (OpenAI CLIP, MIT)"};
}

BuiltinVocabulary builtin_qwen2_vocabulary() {
    return {gunzip(sd_vocab_qwen2_vocab_json, sd_vocab_qwen2_vocab_json_end, "qwen2 vocab.json"),
            gunzip(sd_vocab_qwen2_merges_txt, sd_vocab_qwen2_merges_txt_end, "qwen2 merges.txt"),
            "built-in Qwen2 vocabulary (Qwen2.5 / Qwen3, Apache-2.0)"};
}

}  // namespace sd
