"""Runs a package written by `rlx compile --target ane -o DIR` with CoreML, on macOS.

    python3 run_mlpackage.py DIR --inputs in.safetensors --outputs out.safetensors

Inputs are safetensors tensors named as the model's inputs, in rlx's dtypes; io.json in DIR says
how the package holds each (i64 as int32 word pairs, bool as int32, scalars as shape [1]), and
this script converts both ways. The index checks CoreML cannot raise itself are checked here and
reported with rlx's message. The compute units are the package's choice (io.json) unless
--compute-units says otherwise. Needs coremltools and NumPy (pip install coremltools); CoreML
itself exists only on Apple platforms, so elsewhere this stops at loading.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tests", "python"))
from reference_files import read_safetensors, write_safetensors  # noqa: E402


def to_package(value, io):
    """An input in the package's layout: i64 as its int32 words, bool as int32."""
    if io["dtype"] == "i64":
        value = np.ascontiguousarray(value, dtype=np.int64).reshape(-1).view(np.int32)
    dtype = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32}[io["package_dtype"]]
    return np.asarray(value).astype(dtype).reshape(io["package_shape"])


def from_package(value, io):
    """An output in rlx's layout (bool stays int32 0/1: the tests' safetensors writer has no
    bool)."""
    value = np.ascontiguousarray(value, dtype=np.int32 if io["package_dtype"] == "int32" else None)
    shape = io["package_shape"]
    if io["dtype"] == "i64":
        shape = shape[:-1]
        value = value.reshape(-1).view(np.int64)
    if "a scalar" in io.get("layout", ""):
        shape = []
    return value.reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--outputs", required=True)
    parser.add_argument("--compute-units")
    args = parser.parse_args()
    import coremltools as ct

    with open(os.path.join(args.dir, "io.json")) as f:
        io = json.load(f)
    units = args.compute_units or io["compute_units"]
    model = ct.models.MLModel(os.path.join(args.dir, io["package"]),
                              compute_units=getattr(ct.ComputeUnit, units))
    given = read_safetensors(args.inputs)
    feed = {i["name"]: to_package(given[i["value"]], i) for i in io["inputs"]}
    result = model.predict(feed)
    for check in io["index_checks"]:
        position = int(np.asarray(result[check["position"]]).ravel()[0])
        if position < check["count"]:
            value = int(np.asarray(result[check["value"]]).ravel()[0])
            sys.exit(f"{check['op']}: index {value} (at position {position} of the indices) is out "
                     f"of range for an axis of size {check['axis_size']}")
    out = {o["value"]: from_package(result[o["name"]], o) for o in io["outputs"]}
    write_safetensors(args.outputs, out)


if __name__ == "__main__":
    main()
