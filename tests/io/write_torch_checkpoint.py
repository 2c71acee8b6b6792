#!/usr/bin/python3
"""Write the tensors of a safetensors file as a PyTorch zip checkpoint, laid out as
torch.save writes it, without needing torch.

The zip: every entry stored in a folder ("archive/" by default), in torch's order:
data.pkl, byteorder, data/<key> (one per storage, keys sorted as strings), version,
.data/serialization_id. Local headers carry torch's "FB" extra field of 'Z' padding so that
each entry's bytes start at a multiple of 64, the general-purpose flags 0x0808 with a data
descriptor after the bytes, and the archive ends with a ZIP64 end record, its locator and
the classic end record, as PyTorchStreamWriter (miniz with MZ_ZIP_FLAG_WRITE_ZIP64) does.

The pickle is made by Python's own pickle.Pickler, as torch.save does, with stand-ins for
the torch names it refers to (so the opcodes, memo and persistent ids are torch's):
tensors reduce to torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False,
OrderedDict()), storages are persistent ids ('storage', torch.<Type>Storage, key, 'cpu',
numel), and the state dict is a collections.OrderedDict with a _metadata attribute. Float8
tensors use _rebuild_tensor_v3 on a torch.storage.UntypedStorage as newer torch does.

Usage:
    write_torch_checkpoint.py IN.safetensors OUT.ckpt [--state-dict] [--strided] [--shared]
        [--nest] [--parameters] [--folder NAME] [--protocol N]

  --state-dict  wrap as {"epoch": .., "global_step": .., "state_dict": {...}} (SD checkpoints)
  --strided     store every tensor of 2+ dims with its last two dims transposed, so that the
                pickle gives non-contiguous strides
  --shared      one storage per dtype holding all its tensors, each at its own offset
  --nest        put "a.b.c" under a nested dict {"a": {"b.c": ...}}
  --parameters  wrap tensors in torch._utils._rebuild_parameter (nn.Parameter)
  --folder      the zip folder name (default "archive")
  --protocol    pickle protocol (default 2, as torch.save)
"""
import argparse
import collections
import io
import json
import mmap
import pickle
import struct
import sys
import types
import zlib

import numpy as np

# ---- stand-ins for the torch names the pickle refers to ----------------------------------


def _stub_module(name):
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    return mod


_torch = _stub_module("torch")
_torch_utils = _stub_module("torch._utils")
_torch_storage = _stub_module("torch.storage")
_torch._utils = _torch_utils
_torch.storage = _torch_storage


def _stub_function(module, name):
    def fn(*args):
        raise RuntimeError("stand-in, never called")

    fn.__module__ = module.__name__
    fn.__name__ = fn.__qualname__ = name
    setattr(module, name, fn)
    return fn


def _stub_class(module, name):
    cls = type(name, (), {"__module__": module.__name__})
    setattr(module, name, cls)
    return cls


class _DType:
    """Pickles as the global torch.<name>, as torch.dtype does."""

    def __init__(self, name):
        self.name = name
        self.__module__ = "torch"
        setattr(_torch, name, self)

    def __reduce__(self):
        return self.name


REBUILD_V2 = _stub_function(_torch_utils, "_rebuild_tensor_v2")
REBUILD_V3 = _stub_function(_torch_utils, "_rebuild_tensor_v3")
REBUILD_PARAMETER = _stub_function(_torch_utils, "_rebuild_parameter")
UNTYPED_STORAGE = _stub_class(_torch_storage, "UntypedStorage")

# safetensors dtype -> (element size, torch storage class or v3 dtype, numpy view type)
DTYPES = {
    "F32": (4, _stub_class(_torch, "FloatStorage"), np.uint32),
    "F16": (2, _stub_class(_torch, "HalfStorage"), np.uint16),
    "BF16": (2, _stub_class(_torch, "BFloat16Storage"), np.uint16),
    "F64": (8, _stub_class(_torch, "DoubleStorage"), np.uint64),
    "I64": (8, _stub_class(_torch, "LongStorage"), np.uint64),
    "I32": (4, _stub_class(_torch, "IntStorage"), np.uint32),
    "I16": (2, _stub_class(_torch, "ShortStorage"), np.uint16),
    "I8": (1, _stub_class(_torch, "CharStorage"), np.uint8),
    "U8": (1, _stub_class(_torch, "ByteStorage"), np.uint8),
    "BOOL": (1, _stub_class(_torch, "BoolStorage"), np.uint8),
    "F8_E4M3": (1, _DType("float8_e4m3fn"), np.uint8),
    "F8_E5M2": (1, _DType("float8_e5m2"), np.uint8),
}

# ---- the objects torch.save pickles -------------------------------------------------------


class Storage:
    """One data/<key> entry: a list of byte chunks and the element type."""

    def __init__(self, st_dtype):
        self.st_dtype = st_dtype
        self.chunks = []
        self.nbytes = 0

    def add(self, data):
        self.chunks.append(data)
        self.nbytes += len(data)

    def numel(self):
        return self.nbytes // DTYPES[self.st_dtype][0]


class Tensor:
    def __init__(self, storage, offset, size, stride, parameter):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.parameter = parameter

    def __reduce_ex__(self, proto):
        kind = DTYPES[self.storage.st_dtype][1]
        hooks = collections.OrderedDict()
        args = (self.storage, self.offset, tuple(self.size), tuple(self.stride), False, hooks)
        if isinstance(kind, _DType):
            rebuilt = (REBUILD_V3, args + (kind,))
        else:
            rebuilt = (REBUILD_V2, args)
        if self.parameter:
            return (REBUILD_PARAMETER, (_Rebuilt(rebuilt), False, collections.OrderedDict()))
        return rebuilt


class _Rebuilt:
    def __init__(self, reduced):
        self.reduced = reduced

    def __reduce_ex__(self, proto):
        return self.reduced


class CheckpointPickler(pickle.Pickler):
    def __init__(self, file, protocol):
        super().__init__(file, protocol=protocol)
        self.keys = {}

    def persistent_id(self, obj):
        if not isinstance(obj, Storage):
            return None
        key = self.keys.setdefault(id(obj), (str(len(self.keys)), obj))[0]
        kind = DTYPES[obj.st_dtype][1]
        if isinstance(kind, _DType):
            return ("storage", UNTYPED_STORAGE, key, "cpu", obj.nbytes)
        return ("storage", kind, key, "cpu", obj.numel())


# ---- reading the safetensors file ----------------------------------------------------------


def read_safetensors(path):
    f = open(path, "rb")
    data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    view = memoryview(data)  # slices of it are views of the mapping, not copies
    out = []
    for name, info in header.items():
        begin, end = info["data_offsets"]
        out.append((name, info["dtype"], info["shape"], view[base + begin : base + end]))
    out.sort(key=lambda t: header[t[0]]["data_offsets"][0])
    return out


def contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.insert(0, acc)
        acc *= d
    return strides


def transposed(raw, st_dtype, shape):
    """The bytes with the last two dims swapped, and the strides that view them."""
    view = np.frombuffer(raw, dtype=DTYPES[st_dtype][2]).reshape(shape)
    data = np.ascontiguousarray(np.swapaxes(view, -1, -2)).tobytes()
    strides = contiguous_strides(shape)
    strides[-2], strides[-1] = 1, shape[-2]
    return data, strides


def build_state_dict(tensors, args):
    state = collections.OrderedDict()
    shared = {}
    for name, st_dtype, shape, raw in tensors:
        if st_dtype not in DTYPES:
            sys.exit(f"{name}: dtype {st_dtype} has no torch storage type")
        strides = contiguous_strides(shape)
        if args.strided and len(shape) >= 2 and 0 not in shape:
            raw, strides = transposed(raw, st_dtype, shape)
        if args.shared:
            storage = shared.setdefault(st_dtype, Storage(st_dtype))
        else:
            storage = Storage(st_dtype)
        offset = storage.numel()
        storage.add(raw)
        put(state, name, Tensor(storage, offset, shape, strides, args.parameters), args.nest)
    state._metadata = collections.OrderedDict([("", {"version": 1})])
    return state


def put(state, name, tensor, nest):
    head, dot, rest = name.partition(".")
    if nest and dot:
        sub = state.get(head)
        if sub is None:
            sub = state[head] = collections.OrderedDict()
        if isinstance(sub, dict) and rest not in sub:
            sub[rest] = tensor
            return
    state[name] = tensor


# ---- writing the zip -----------------------------------------------------------------------

ALIGN = 64
U32_MAX = 0xFFFFFFFF


def zip64_extra(size, offset):
    """The ZIP64 extra field (id 1) for the values that do not fit in 32 bits, or b""."""
    fields = struct.pack("<QQ", size, size) if size >= U32_MAX else b""
    fields += struct.pack("<Q", offset) if offset >= U32_MAX else b""
    return struct.pack("<HH", 1, len(fields)) + fields if fields else b""


class ZipWriter:
    def __init__(self, path, folder):
        self.f = open(path, "wb")
        self.folder = folder
        self.records = []  # (name, flags, crc, size, offset)

    def pos(self):
        return self.f.tell()

    def write(self, name, chunks):
        full = (self.folder + "/" + name).encode()
        size = sum(len(c) for c in chunks)
        offset = self.pos()
        zip64 = zip64_extra(size, offset)
        start = offset + 30 + len(full) + len(zip64) + 4
        pad = -start % ALIGN
        extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        big = U32_MAX if size >= U32_MAX else 0
        # miniz writes a data descriptor after the bytes, except for empty entries.
        flags = 0x0808 if size else 0x0800
        header = (0x04034B50, 0, flags, 0, 0, 0, 0, big, big, len(full), len(extra))
        self.f.write(struct.pack("<IHHHHHIIIHH", *header) + full + extra)
        crc = 0
        for c in chunks:
            crc = zlib.crc32(c, crc)
            self.f.write(c)
        if size >= U32_MAX:
            self.f.write(struct.pack("<IIQQ", 0x08074B50, crc, size, size))
        elif size:
            self.f.write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        self.records.append((full, flags, crc, size, offset))

    def close(self):
        cd_offset = self.pos()
        for full, flags, crc, size, offset in self.records:
            extra = zip64_extra(size, offset)
            s32, o32 = min(size, U32_MAX), min(offset, U32_MAX)
            record = (0x02014B50, 0, 0, flags, 0, 0, 0, crc, s32, s32, len(full), len(extra))
            record += (0, 0, 0, 0, o32)  # comment length, disk, attributes, local header offset
            self.f.write(struct.pack("<IHHHHHHIIIHHHHHII", *record) + full + extra)
        cd_size = self.pos() - cd_offset
        n = len(self.records)
        end64 = self.pos()
        end = (0x06064B50, 44, 0x031E, 0x2D, 0, 0, n, n, cd_size, cd_offset)
        self.f.write(struct.pack("<IQHHIIQQQQ", *end))
        self.f.write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
        n16 = min(n, 0xFFFF)
        end = (0x06054B50, 0, 0, n16, n16, min(cd_size, U32_MAX), min(cd_offset, U32_MAX), 0)
        self.f.write(struct.pack("<IHHHHIIH", *end))
        self.f.close()


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--state-dict", action="store_true")
    ap.add_argument("--strided", action="store_true")
    ap.add_argument("--shared", action="store_true")
    ap.add_argument("--nest", action="store_true")
    ap.add_argument("--parameters", action="store_true")
    ap.add_argument("--folder", default="archive")
    ap.add_argument("--protocol", type=int, default=2)
    args = ap.parse_args()

    state = build_state_dict(read_safetensors(args.input), args)
    obj = state
    if args.state_dict:
        obj = {"epoch": 6, "global_step": 840000, "pytorch-lightning_version": "1.4.2"}
        obj["state_dict"] = state
    buf = io.BytesIO()
    pickler = CheckpointPickler(buf, args.protocol)
    pickler.dump(obj)
    pkl = buf.getvalue()

    z = ZipWriter(args.output, args.folder)
    z.write("data.pkl", [pkl])
    z.write("byteorder", [b"little"])
    for key, storage in sorted(pickler.keys.values()):
        z.write("data/" + key, storage.chunks)
    z.write("version", [b"3\n"])
    z.write(".data/serialization_id", [b"%040d" % (zlib.crc32(pkl) * 1000003)])
    z.close()


if __name__ == "__main__":
    main()
