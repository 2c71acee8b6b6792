#!/usr/bin/python3
"""Expected ids for tests/tokenizer/t5_tokenizer_test.cpp, made independently of our C++ code
with Google's SentencePiece (Debian's python3-sentencepiece and python3-protobuf).

stable-diffusion.cpp normalises T5 text its own way (runs of spaces made one, every space
becomes U+2581 and one is put in front, a single trailing space dropped, no NFKC), unlike
SentencePiece's own normaliser (nmt_nfkc, ends stripped). So the text is normalised here the
reference program's way and SentencePiece is run on a copy of the model whose normaliser is
switched off (identity, no dummy prefix, no whitespace removal): what is left is
SentencePiece's unigram Viterbi, including its merging of consecutive unknown pieces.

Usage: make_t5_expected.py SPIECE_MODEL  (prints C++ initialiser lines)
"""
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb

TEXTS = [
    "a lovely cat holding a sign",
    "",
    " ",
    "Hello, World!",
    "  leading and trailing  ",
    "multiple     spaces   here",
    "trailing space ",
    "digits 1234567890 and 3.14159",
    "punctuation: (a), [b]; {c}? d!... e-f_g/h",
    "UPPER lower MiXeD",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9",
    "\u6f22\u5b57 and emoji \U0001f431\U0001f436",
    "x\u2603\u2603y",
    "tab\there\nnewline",
    "\uff21\uff22\uff23 fullwidth",
    "</s> <pad> <unk>",
    "a photo of an astronaut riding a horse on mars, 8k, highly detailed",
    "don't can't won't it's",
    "email@example.com https://example.org/path?q=1",
    "\u2581already\u2581marked",
    "a red bicycle leaning on a wall, evening light",
]


def reference_normalize(text):
    """stable-diffusion.cpp: regex ' {2,}' -> ' ', then Metaspace with std::getline fields."""
    while "  " in text:
        text = text.replace("  ", " ")
    fields = text.split(" ")
    if fields[-1] == "":
        fields.pop()
    return "\u2581" + "\u2581".join(fields)


def cpp_string(s):
    out, after_hex = '"', False
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if ch in (0x22, 0x5C):
            out += "\\" + c
        elif 0x20 <= ch < 0x7F:
            out += ('" "' if after_hex and c in "0123456789abcdefABCDEF" else "") + c
        else:
            out += "\\x%02X" % ch
        after_hex = not (0x20 <= ch < 0x7F)
    return out + '"'


def main():
    model = pb.ModelProto()
    with open(sys.argv[1], "rb") as f:
        model.ParseFromString(f.read())
    model.normalizer_spec.name = "identity"
    model.normalizer_spec.precompiled_charsmap = b""
    model.normalizer_spec.add_dummy_prefix = False
    model.normalizer_spec.remove_extra_whitespaces = False
    sp = spm.SentencePieceProcessor(model_proto=model.SerializeToString())
    for text in TEXTS:
        ids = sp.encode(reference_normalize(text)) + [sp.eos_id()]
        print("    {%s, {%s}}," % (cpp_string(text), ", ".join(map(str, ids))))


if __name__ == "__main__":
    main()
