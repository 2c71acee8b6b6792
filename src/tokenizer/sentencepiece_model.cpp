#include "tokenizer/sentencepiece_model.h"

#include <cstring>

#include "base/error.h"

namespace sd {
namespace {

// Protobuf wire types.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// One message's bytes, read front to back; every read checks the bounds.
class WireReader {
  public:
    WireReader(std::string_view data, const std::string& source, const char* message, size_t base)
        : data_(data), source_(source), message_(message), base_(base) {}

    bool done() const { return pos_ >= data_.size(); }

    // The next field's number and wire type.
    void next_key(uint32_t& field, uint32_t& wire) {
        key_at_ = pos_;
        const uint64_t key = varint();
        field = static_cast<uint32_t>(key >> 3);
        wire = static_cast<uint32_t>(key & 7);
        if (field == 0 || key >> 32) bad("an invalid field key");
        field_ = field;
    }

    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (done()) truncated();
            const auto b = static_cast<uint8_t>(data_[pos_++]);
            v |= static_cast<uint64_t>(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        bad("a varint longer than 10 bytes");
    }

    float fixed32_float() {
        if (data_.size() - pos_ < 4) truncated();
        uint32_t bits = 0;
        for (int i = 0; i < 4; ++i)
            bits |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
        pos_ += 4;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }

    // A length-delimited field's bytes and their offset in the file.
    std::string_view bytes(size_t* offset = nullptr) {
        const uint64_t n = varint();
        if (n > data_.size() - pos_) truncated();
        if (offset) *offset = base_ + pos_;
        const std::string_view out = data_.substr(pos_, static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        return out;
    }

    WireReader message(const char* name) {
        size_t offset = 0;
        const std::string_view m = bytes(&offset);
        return WireReader(m, source_, name, offset);
    }

    int32_t int32() { return static_cast<int32_t>(static_cast<uint32_t>(varint())); }

    void expect(uint32_t wire, uint32_t want) {
        if (wire != want) bad("a field of the wrong wire type");
    }

    void skip(uint32_t wire) {
        switch (wire) {
            case kVarint:
                varint();
                break;
            case kFixed64:
                advance(8);
                break;
            case kBytes:
                bytes();
                break;
            case kFixed32:
                advance(4);
                break;
            default:
                bad("an unsupported wire type (group)");
        }
    }

  private:
    void advance(size_t n) {
        if (data_.size() - pos_ < n) truncated();
        pos_ += n;
    }
    [[noreturn]] void truncated() const {
        fail(
            "%s: not a complete SentencePiece model: %s field %u at byte %zu runs past the end "
            "(truncated file?)",
            source_.c_str(), message_, field_, base_ + key_at_);
    }
    [[noreturn]] void bad(const char* what) const {
        fail("%s: not a SentencePiece model: %s in %s at byte %zu", source_.c_str(), what, message_,
             base_ + key_at_);
    }

    std::string_view data_;
    const std::string& source_;
    const char* message_;
    size_t base_;
    size_t pos_ = 0;
    size_t key_at_ = 0;
    uint32_t field_ = 0;
};

SentencePieceModel::Piece read_piece(WireReader r) {
    SentencePieceModel::Piece p;
    uint32_t field = 0, wire = 0;
    while (!r.done()) {
        r.next_key(field, wire);
        if (field == 1) {
            r.expect(wire, kBytes);
            p.text = std::string(r.bytes());
        } else if (field == 2) {
            r.expect(wire, kFixed32);
            p.score = r.fixed32_float();
        } else if (field == 3) {
            r.expect(wire, kVarint);
            p.type = static_cast<SentencePieceModel::PieceType>(r.int32());
        } else {
            r.skip(wire);
        }
    }
    return p;
}

void read_trainer_spec(WireReader r, SentencePieceModel& m) {
    uint32_t field = 0, wire = 0;
    while (!r.done()) {
        r.next_key(field, wire);
        int32_t* id = field == 40   ? &m.unk_id
                      : field == 41 ? &m.bos_id
                      : field == 42 ? &m.eos_id
                      : field == 43 ? &m.pad_id
                      : field == 3  ? &m.model_type
                                    : nullptr;
        if (id) {
            r.expect(wire, kVarint);
            *id = r.int32();
        } else if (field == 35) {
            r.expect(wire, kVarint);
            m.byte_fallback = r.varint() != 0;
        } else {
            r.skip(wire);
        }
    }
}

void read_normalizer_spec(WireReader r, SentencePieceModel& m) {
    uint32_t field = 0, wire = 0;
    while (!r.done()) {
        r.next_key(field, wire);
        bool* flag = field == 3   ? &m.add_dummy_prefix
                     : field == 4 ? &m.remove_extra_whitespaces
                     : field == 5 ? &m.escape_whitespaces
                                  : nullptr;
        if (flag) {
            r.expect(wire, kVarint);
            *flag = r.varint() != 0;
        } else if (field == 1) {
            r.expect(wire, kBytes);
            m.normalizer_name = std::string(r.bytes());
        } else {
            r.skip(wire);
        }
    }
}

}  // namespace

SentencePieceModel parse_sentencepiece_model(std::string_view bytes, const std::string& source) {
    SentencePieceModel m;
    WireReader r(bytes, source, "ModelProto", 0);
    uint32_t field = 0, wire = 0;
    while (!r.done()) {
        r.next_key(field, wire);
        if (field == 1) {
            r.expect(wire, kBytes);
            m.pieces.push_back(read_piece(r.message("a piece")));
        } else if (field == 2) {
            r.expect(wire, kBytes);
            read_trainer_spec(r.message("trainer_spec"), m);
        } else if (field == 3) {
            r.expect(wire, kBytes);
            read_normalizer_spec(r.message("normalizer_spec"), m);
        } else {
            r.skip(wire);
        }
    }
    if (m.pieces.empty()) fail("%s: not a SentencePiece model: it has no pieces", source.c_str());
    return m;
}

}  // namespace sd
