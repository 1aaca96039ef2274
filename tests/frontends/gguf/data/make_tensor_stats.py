"""Writes tensor_stats.txt: for every tensor of the GGUF files in tests/data/gguf that
llama.cpp can read, its element count, sum, sum of squares and a few values, decoded by the
gguf package from PyPI (llama.cpp's own Python reader): the reference for rlx's decoders on
real files.

    python -m venv /tmp/v && /tmp/v/bin/pip install gguf numpy
    /tmp/v/bin/python make_tensor_stats.py ../../../data/gguf > tensor_stats.txt
"""
import pathlib
import sys

import numpy as np
import gguf.gguf_reader
from gguf import GGUFReader, GGML_QUANT_SIZES
from gguf.quants import dequantize

# The reader refuses a whole file when one tensor has rows of partial blocks (the stories260K
# file has five). Let it lay such tensors out as one flat stream of blocks; they are skipped.
_strict_shape = gguf.gguf_reader.quant_shape_to_byte_shape


def _lenient_shape(shape, qtype):
    block, size = GGML_QUANT_SIZES[qtype]
    if shape[-1] % block:
        n = int(np.prod(shape))
        return (-(-n // block) * size,)
    return _strict_shape(shape, qtype)


gguf.gguf_reader.quant_shape_to_byte_shape = _lenient_shape

for path in sorted(pathlib.Path(sys.argv[1]).glob("*.gguf")):
    reader = GGUFReader(path)
    for t in reader.tensors:
        block = GGML_QUANT_SIZES[t.tensor_type][0]
        if int(t.shape[0]) % block:
            continue  # rows of partial blocks: llama.cpp rejects them, so does rlx
        v = dequantize(t.data, t.tensor_type).astype(np.float64).reshape(-1)
        picks = [0, 1, v.size // 2, v.size - 1]
        print(path.name, t.name, t.tensor_type.name.lower(), v.size, repr(float(v.sum())),
              repr(float((v * v).sum())), *[repr(float(v[i])) for i in picks])
