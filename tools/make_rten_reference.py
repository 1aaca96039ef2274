#!/usr/bin/env python3
"""Writes tests/frontends/rten/silero_reference.safetensors: silero_vad.onnx run by ONNX Runtime
on fixed inputs, the reference the rten importer's parity test compares against (silero_vad.rten
is the same model converted by rten-convert; see tests/data/rten/README.md).

Needs numpy, onnxruntime and safetensors (pip, in a venv). Run from the repository root:
    python3 tools/make_rten_reference.py [path/to/silero_vad.onnx]

Cases: batch 1 and batch 2, 512 samples, sr 16000 and 8000. Tensors are named
<case>.<name>; inputs keep ONNX's int64 `sr`, the test narrows it to rten's int32.
"""
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from safetensors.numpy import save_file

root = Path(__file__).resolve().parent.parent
model = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "tests/data/rten/silero_vad.onnx"
out = root / "tests/frontends/rten/silero_reference.safetensors"

rng = np.random.default_rng(20241129)
session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
tensors = {}
for batch in (1, 2):
    # A 440 Hz tone with noise (speech-like energy), and a recurrent state from a previous chunk.
    t = np.arange(512, dtype=np.float32) / 16000.0
    audio = 0.3 * np.sin(2 * np.pi * 440.0 * t)[None, :] + 0.05 * rng.standard_normal((batch, 512))
    audio = audio.astype(np.float32)
    h = (0.5 * rng.standard_normal((2, batch, 64))).astype(np.float32)
    c = (0.5 * rng.standard_normal((2, batch, 64))).astype(np.float32)
    for sr in (16000, 8000):
        case = f"b{batch}_sr{sr}"
        feeds = {"input": audio, "sr": np.array(sr, dtype=np.int64), "h": h, "c": c}
        output, hn, cn = session.run(["output", "hn", "cn"], feeds)
        for k, v in feeds.items():
            tensors[f"{case}.{k}"] = v
        tensors[f"{case}.output"] = output
        tensors[f"{case}.hn"] = hn
        tensors[f"{case}.cn"] = cn
        print(case, "output", output.ravel())
save_file(tensors, str(out), metadata={"onnxruntime": ort.__version__, "model": model.name})
print("wrote", out)
