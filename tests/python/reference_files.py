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
BERT_ONNX = os.path.join(ROOT, "tests", "data", "fixtures", "bert-tiny-onnx")

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
