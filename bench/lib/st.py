"""safetensors files with NumPy only, so every peer's venv can read the shared inputs and write
its outputs without the safetensors package (the format: an 8-byte little-endian header length,
a JSON header of name -> dtype, shape, data_offsets, then the raw little-endian data)."""
import json
import struct

import numpy as np

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
           "I8": "i1", "U8": "u1", "BOOL": "?"}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}, not supported here")
        start, end = info["data_offsets"]
        buf = data[8 + n + start:8 + n + end]
        out[name] = np.frombuffer(buf, dtype=_DTYPES[info["dtype"]]).reshape(info["shape"]).copy()
    return out


def write(path, tensors):
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        key = np.dtype(a.dtype.str.replace("=", "<").replace("|", ""))
        if key not in _NAMES and a.dtype != np.bool_:
            raise ValueError(f"tensor {name}: dtype {a.dtype} cannot be written")
        raw = a.tobytes()
        header[name] = {"dtype": "BOOL" if a.dtype == np.bool_ else _NAMES[key],
                        "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # keeps the data 8-byte aligned for mmap readers
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
