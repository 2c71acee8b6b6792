#!/usr/bin/python3
"""Write a full-depth FLUX.1-dev diffusion model (19 double + 38 single blocks, 12B
parameters) as a q8_0 GGUF, for the streaming-memory benchmark (bench/flux_stream_rss.sh).

The tensors are those of ../shared/fixtures/manifests/flux_dev_d2s2.tsv with the blocks
repeated to full depth; their values come from mkckpt.py's generator (same seed, same
name -> same values), written directly as q8_0 where the reference program's convert would
quantize them (rows a multiple of 32, not a bias/scale, not img_in/txt_in/time_in/
vector_in/guidance_in/final_layer) and as bf16 otherwise. Writing q8_0 directly avoids the
24 GB bf16 intermediate a convert would need; the file is about 12.7 GB.

Usage: make_flux_full_q8.py OUT.gguf [--seed 10] [--double 19] [--single 38]
Needs python3-numpy (/usr/bin/python3).
"""
import argparse, os, re, struct, sys

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "fixtures")
sys.path.insert(0, os.environ.get("SD_FIXTURES", "/work/shared/fixtures"))
sys.path.insert(0, FIXTURES)
import numpy as np  # noqa: E402
import mkckpt  # noqa: E402

GGML_F32, GGML_BF16, GGML_Q8_0, GGML_Q4_K = 0, 30, 8, 12
KEEP = ("img_in.", "txt_in.", "time_in.", "vector_in.", "guidance_in.", "final_layer.", "embedding")
ALIGN = 32


def full_depth(manifest, n_double, n_single):
    out = []
    for name, dtype, shape in manifest:
        m = re.match(r"(double|single)_blocks\.(\d+)\.(.*)", name)
        if not m:
            out.append((name, shape))
        elif m.group(2) == "0":
            n = n_double if m.group(1) == "double" else n_single
            out += [(f"{m.group(1)}_blocks.{i}.{m.group(3)}", shape) for i in range(n)]
    return out


def repeat_first_block(manifest, prefix, n, widths=None):
    """MANIFEST's (name, shape)s with PREFIX.0.* repeated as PREFIX.0 .. PREFIX.{N-1} (its other
    PREFIX.i dropped), each dimension mapped through WIDTHS ({old: new}) when given."""
    out, widths = [], widths or {}
    for name, _, shape in manifest:
        shape = [widths.get(d, d) for d in shape]
        m = re.match(re.escape(prefix) + r"\.(\d+)\.(.*)", name)
        if not m:
            out.append((name, shape))
        elif m.group(1) == "0":
            out += [(f"{prefix}.{i}.{m.group(2)}", shape) for i in range(n)]
    return out


def quantized(name, shape, keep=KEEP, block=32):
    return (len(shape) >= 2 and shape[-1] % block == 0 and not name.endswith((".bias", ".scale"))
            and not any(k in name for k in keep))


def q8_0(v):
    x = v.astype(np.float32).reshape(-1, 32)
    d = np.abs(x).max(axis=1) / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.rint(x * inv[:, None]).astype(np.int8)
    out = np.empty((x.shape[0], 34), np.uint8)
    out[:, :2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def q4_k(v):
    """ggml's block_q4_K: 256 values as 8 sub-blocks of 32, each q * d * sc - dmin * m with
    4-bit q and 6-bit sc, m (packed in 12 bytes); d, dmin f16 first, then the scales, the quants."""
    x = v.astype(np.float32).reshape(-1, 8, 32)
    n = x.shape[0]
    low = np.minimum(x.min(axis=2), 0)
    scale, m = (x.max(axis=2) - low) / 15, -low

    def six_bit(values):
        top = values.max(axis=1) / 63
        inv = np.divide(1.0, top, out=np.zeros_like(top), where=top != 0)
        return top, np.clip(np.rint(values * inv[:, None]), 0, 63).astype(np.uint8)

    d, sc = six_bit(scale)
    dmin, mq = six_bit(m)
    step = d[:, None] * sc
    inv = np.divide(1.0, step, out=np.zeros_like(step), where=step != 0)
    q = np.clip(np.rint((x + (dmin[:, None] * mq)[:, :, None]) * inv[:, :, None]), 0, 15).astype(np.uint8)
    out = np.empty((n, 144), np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = dmin.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 4:8] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    out[:, 8:12] = mq[:, :4] | ((mq[:, 4:] >> 4) << 6)
    out[:, 12:16] = (sc[:, 4:] & 0xF) | ((mq[:, 4:] & 0xF) << 4)
    out[:, 16:] = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(n, 128)
    return out.tobytes()


# name: (ggml type, values a block, bytes a block, encoder)
QUANTS = {"q8_0": (GGML_Q8_0, 32, 34, q8_0), "q4_K": (GGML_Q4_K, 256, 144, q4_k)}


def nbytes(name, shape, keep=KEEP, quant="q8_0"):
    _, block, size, _ = QUANTS[quant]
    n = int(np.prod(shape))
    return n // block * size if quantized(name, shape, keep, block) else n * 2


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(out, tensors, arch, seed, part=None, keep=KEEP, quant="q8_0"):
    """Write TENSORS ([(name, shape)]) with mkckpt's values for SEED: QUANT (q8_0 or q4_K) where
    quantized() says so, bf16 otherwise. PART "FIRST:END" fills only those tensors of an existing
    OUT.part."""
    qtype, block, _, encode = QUANTS[quant]
    head = struct.pack("<IIQQ", 0x46554747, 3, len(tensors), 1)
    head += gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string(arch)
    offset, offsets = 0, []
    for name, shape in tensors:
        offsets.append(offset)
        kind = qtype if quantized(name, shape, keep, block) else GGML_BF16
        head += gguf_string(name) + struct.pack("<I", len(shape))
        head += b"".join(struct.pack("<Q", d) for d in reversed(shape))
        head += struct.pack("<IQ", kind, offset)
        offset += (nbytes(name, shape, keep, quant) + ALIGN - 1) // ALIGN * ALIGN
    head += b"\0" * ((ALIGN - len(head) % ALIGN) % ALIGN)

    tmp = out + ".part"
    first, end = (int(x) for x in part.split(":")) if part else (0, len(tensors))
    with open(tmp, "r+b" if part else "wb") as f:
        f.write(head)
        for i, (name, shape) in enumerate(tensors):
            if i < first or i >= end:
                continue
            f.seek(len(head) + offsets[i])
            v = np.concatenate(list(mkckpt.values(name, shape, seed)))  # mkckpt yields chunks
            data = encode(v) if quantized(name, shape, keep, block) else mkckpt.to_bytes(v, "bf16")
            f.write(data + b"\0" * ((ALIGN - len(data) % ALIGN) % ALIGN))
            if i % 50 == 0:
                print(f"{i}/{len(tensors)} {name}", file=sys.stderr, flush=True)
    if part:
        return
    os.rename(tmp, out)
    print(f"wrote {out}: {len(tensors)} tensors, {(len(head) + offset) / 2**30:.2f} GiB", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--double", type=int, default=19)
    ap.add_argument("--single", type=int, default=38)
    ap.add_argument("--part", help="FIRST:END: write only these tensors into an existing OUT.part "
                    "(several processes fill one file in parallel; rename it when all are done)")
    a = ap.parse_args()
    manifest = mkckpt.read_manifest(os.path.join(mkckpt.__file__.rsplit("/", 1)[0], "manifests", "flux_dev_d2s2.tsv"))
    write_gguf(a.out, full_depth(manifest, a.double, a.single), "flux", a.seed, a.part)


if __name__ == "__main__":
    main()
