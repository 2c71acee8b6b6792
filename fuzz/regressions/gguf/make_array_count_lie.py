#!/usr/bin/python3
"""Writes a sparse GGUF file (default 8 GiB, 4 KiB on disk) whose one metadata value is an
array of u64 claiming as many elements as the file has bytes left. read_gguf reserves
count * sizeof(MetadataValue) (40 bytes) before reading any element (gguf_reader.cpp:68),
so it throws std::bad_alloc instead of an sd::Error; at 64 MiB the fuzz target reports
"out-of-memory (malloc(2684352600))" under -rss_limit_mb=2048.

Usage: make_array_count_lie.py OUT.gguf [SIZE_BYTES]
"""
import struct
import sys

out = sys.argv[1]
size = int(sys.argv[2]) if len(sys.argv) > 2 else 8 << 30
head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)  # v3, 0 tensors, 1 key/value
head += struct.pack("<Q", 1) + b"k" + struct.pack("<II", 9, 10)  # key "k": array of u64
head += struct.pack("<Q", size - len(head) - 8)  # element count = bytes left
with open(out, "wb") as f:
    f.write(head)
    f.truncate(size)
