"""The op sequence coremltools' own MIL builder writes for the dense block of
AneOnCoreMlTools.NativeOpsAreOneMilOpEach (Linear, LayerNorm, GELU, Softmax, then a LayerNorm
whose scale is an input), converted to an ML Program without graph passes. Prints the non-const
op types as one JSON list."""
import json
import logging
import os

import numpy as np

logging.disable(logging.WARNING)
os.environ.setdefault("TQDM_DISABLE", "1")

import coremltools as ct  # noqa: E402
from coremltools.converters.mil import Builder as mb  # noqa: E402

W = np.ones((4, 3), np.float32)
B = np.zeros(4, np.float32)
G = np.ones(4, np.float32)


@mb.program(input_specs=[mb.TensorSpec(shape=(2, 3)), mb.TensorSpec(shape=(4,))],
            opset_version=ct.target.iOS17)
def program(x, g2):
    h = mb.linear(x=x, weight=W, bias=B)
    n = mb.layer_norm(x=h, axes=[-1], gamma=G, beta=B, epsilon=1e-5)
    a = mb.gelu(x=n, mode="EXACT")
    s = mb.softmax(x=a, axis=-1)
    m = mb.mul(x=mb.layer_norm(x=s, axes=[-1], epsilon=1e-5), y=g2)
    return s, m


model = ct.convert(program, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS17,
                   pass_pipeline=ct.PassPipeline.EMPTY, skip_model_load=True,
                   compute_precision=ct.precision.FLOAT32)
function = model.get_spec().mlProgram.functions["main"]
ops = function.block_specializations[function.opset].operations
print(json.dumps([op.type for op in ops if op.type != "const"]))
