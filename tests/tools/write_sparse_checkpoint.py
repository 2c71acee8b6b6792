#!/usr/bin/python3
"""Writes a .safetensors file with a manifest's names, dtypes and shapes whose data is a
hole (all zeros, no disk blocks): enough to test loading, detection and shape checks of a
full-size layout without generating its weights.

usage: write_sparse_checkpoint.py MANIFEST.tsv OUT [--drop NAME] [--drop-prefix PREFIX]
       [--shape NAME=D0,D1,...] [--rename OLD=NEW] [--fill NAME=VALUE] [--eye NAME]
       [--add NAME=DTYPE:D0,D1,...]

--add writes one more tensor after the manifest's (a layout the fixtures' manifests lack,
e.g. Chroma-Radiance's heads over Chroma's); DTYPE as the manifest's, no dims: an empty
tensor [0] (a marker).

--fill writes every element of NAME as VALUE; --eye makes NAME (a [C, C, 1, 1] or [C, C]
weight) the identity. Both need an f32 or f16 tensor.
"""
import json
import struct
import sys

import numpy as np

SIZES = {"f32": ("F32", 4), "f16": ("F16", 2), "bf16": ("BF16", 2), "i64": ("I64", 8)}


def main(argv):
    manifest, out = argv[1], argv[2]
    drops, drop_prefixes, shapes, renames, fills, eyes = set(), [], {}, {}, {}, set()
    added = []
    i = 3
    while i < len(argv):
        flag, value = argv[i], argv[i + 1]
        if flag == "--drop":
            drops.add(value)
        elif flag == "--drop-prefix":
            drop_prefixes.append(value)
        elif flag == "--shape":
            name, dims = value.split("=")
            shapes[name] = [int(d) for d in dims.split(",")]
        elif flag == "--rename":
            old, new = value.split("=")
            renames[old] = new
        elif flag == "--fill":
            name, v = value.split("=")
            fills[name] = float(v)
        elif flag == "--eye":
            eyes.add(value)
        elif flag == "--add":
            name, spec = value.split("=")
            dtype, _, dims = spec.partition(":")
            added.append([name, dtype] + (dims.split(",") if dims else ["0"]))
        else:
            sys.exit("unknown option " + flag)
        i += 2
    header, offset, data = {}, 0, {}
    with open(manifest) as f:
        lines = [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]
    for parts in lines + added:
        if parts[0] in drops or any(parts[0].startswith(p) for p in drop_prefixes):
            continue
        name, dtype, dims = parts[0], parts[1], [int(d) for d in parts[2:] if d]
        dims = shapes.get(name, dims)
        st_type, size = SIZES[dtype]
        count = 1
        for d in dims:
            count *= d
        header[renames.get(name, name)] = {
            "dtype": st_type, "shape": dims, "data_offsets": [offset, offset + count * size]}
        np_type = np.float32 if dtype == "f32" else np.float16
        if name in fills:
            data[offset] = np.full(count, fills[name], dtype=np_type).tobytes()
        if name in eyes:
            data[offset] = np.eye(dims[0], dims[1], dtype=np_type).tobytes()
        offset += count * size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        f.truncate(8 + len(blob) + offset)
        for at, values in data.items():
            f.seek(8 + len(blob) + at)
            f.write(values)


if __name__ == "__main__":
    main(sys.argv)
