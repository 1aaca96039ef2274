"""Writes <qtype>.bin (random blocks) and <qtype>.ref (float32 values) decoded by the gguf
package from PyPI (gguf-py, llama.cpp's own Python reader), an implementation independent of
rlx's. Random bytes include Inf/NaN scales on purpose: both decoders must agree on those too.

    python -m venv /tmp/v && /tmp/v/bin/pip install gguf numpy && /tmp/v/bin/python make_reference.py
"""
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

TYPES = {"f16": T.F16, "bf16": T.BF16, "q4_0": T.Q4_0, "q4_1": T.Q4_1, "q5_0": T.Q5_0,
         "q5_1": T.Q5_1, "q8_0": T.Q8_0, "q2_k": T.Q2_K, "q3_k": T.Q3_K, "q4_k": T.Q4_K,
         "q5_k": T.Q5_K, "q6_k": T.Q6_K, "iq4_nl": T.IQ4_NL, "iq4_xs": T.IQ4_XS}

rng = np.random.default_rng(7)
for name, t in TYPES.items():
    block, size = gguf.GGML_QUANT_SIZES[t]
    nblocks = 8 if block == 32 else 4 if block == 256 else 64
    raw = rng.integers(0, 256, size=nblocks * size, dtype=np.uint8)
    with np.errstate(all="ignore"):
        ref = gguf.quants.dequantize(raw.reshape(1, -1), t).reshape(-1).astype(np.float32)
    raw.tofile(f"{name}.bin")
    ref.tofile(f"{name}.ref")
    print(name, nblocks, "blocks,", ref.size, "values")
