# Where the repository's fixtures are, and a safetensors reader in NumPy: the tests' own view of
# the reference files, independent of rlx. Needs only NumPy (the wheel test imports it into a
# fresh venv).
import json
import os
import struct

import numpy as np

ROOT = os.environ.get("RLX_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TINY_GPT = os.path.join(ROOT, "models", "tiny-gpt")
FIXTURES = os.path.join(ROOT, "tests", "data", "fixtures")
BERT_ONNX = os.path.join(FIXTURES, "bert-tiny-onnx")
MINILM = os.path.join(FIXTURES, "minilm-l2-f16")
QWEN3 = os.path.join(FIXTURES, "qwen3-tiny")

_NAMES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
          np.dtype(np.int32): "I32"}
_NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
                 "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    """{name: numpy array} of a .safetensors file (8-byte header length, JSON header, data)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        data = np.frombuffer(blob[8 + n + start:8 + n + end], dtype=_NUMPY_DTYPES[entry["dtype"]])
        out[name] = data.reshape(entry["shape"]).copy()
    return out


def write_safetensors(path, tensors):
    """Writes {name: numpy array} (f32, f16, i64, i32) as a .safetensors file."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        header[name] = {"dtype": _NAMES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
