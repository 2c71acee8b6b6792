// Reads a SentencePiece model file (`spiece.model`): the ModelProto protobuf, decoded with a
// small wire-format reader of our own that keeps only the fields a unigram tokenizer needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sd {

struct SentencePieceModel {
    // ModelProto.SentencePiece.Type
    enum class PieceType : int32_t {
        Normal = 1,
        Unknown = 2,
        Control = 3,
        UserDefined = 4,
        Unused = 5,
        Byte = 6
    };
    struct Piece {
        std::string text;
        float score = 0.0f;
        PieceType type = PieceType::Normal;
    };
    std::vector<Piece> pieces;
    // TrainerSpec (proto2 defaults when absent)
    int32_t model_type = 1;  // 1 unigram, 2 BPE, 3 word, 4 char
    bool byte_fallback = false;
    int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
    // NormalizerSpec
    std::string normalizer_name;
    bool add_dummy_prefix = true;
    bool remove_extra_whitespaces = true;
    bool escape_whitespaces = true;
};

// Parses the bytes of a spiece.model; `source` names it in error messages. Throws sd::Error
// (one line) for truncated or malformed data.
SentencePieceModel parse_sentencepiece_model(std::string_view bytes, const std::string& source);

}  // namespace sd
