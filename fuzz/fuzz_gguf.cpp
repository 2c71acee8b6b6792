// read_gguf over the input as a file, then every small tensor loaded, read and converted
// to f32 (dequantizing block types), every metadata value formatted, and a CLIP vocabulary
// in the metadata (tokenizer.ggml.*) loaded and used as the engine would.
#include <string>

#include "fuzz_util.h"
#include "io/tensor_file.h"
#include "tokenizer/clip_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = sd::fuzz::write_file("input.gguf", data, size);
    sd::fuzz::run_one([&] {
        sd::TensorFile file = sd::read_gguf(path);
        sd::fuzz::sink = sd::fuzz::touch(file);
        if (!sd::ClipTokenizer::gguf_has_vocab(file.metadata)) return;
        sd::ClipTokenizer tok = sd::ClipTokenizer::from_gguf_metadata(file.metadata, path);
        std::vector<int32_t> ids =
            tok.tokenize_padded("a photo of a cat, <|endoftext|> 42", 77, tok.eos_id());
        sd::fuzz::sink = tok.decode(ids).size() + tok.to_gguf_metadata().size();
    });
    return 0;
}
