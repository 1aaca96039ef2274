"""Checks and evaluates an ML Program package written by rlx's ane target with coremltools,
Apple's own Python tooling for CoreML (PyPI), on a machine without CoreML:

1. coremltools.models.MLModel loads the package (skip_model_load: no CoreML runtime here);
2. coremltools' milproto loader rebuilds the MIL program, running its type and shape inference
   on every op; each op's inferred output type must equal the type rlx declared for it;
3. with --inputs, the program's inputs are made const ops holding the given values and the
   program is rebuilt again: coremltools' value inference (its NumPy implementation of each MIL
   op) then computes every value, and the outputs are written to --outputs. Value inference
   skips constexpr ops (compressed weights), so each is made a const of the value coremltools'
   own decompression (materialized_val_inference) gives first.

Inputs and outputs are safetensors files in the package's layout (io.json). Prints one JSON
line: {"ops": N, "op_types": [...]} on success; exits 1 with the reason otherwise.
"""
import argparse
import json
import logging
import os
import sys

import numpy as np

# The tests' own safetensors reader and writer (tests/python/reference_files.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tests", "python"))
from reference_files import read_safetensors, write_safetensors  # noqa: E402

logging.disable(logging.WARNING)
os.environ.setdefault("TQDM_DISABLE", "1")

import coremltools as ct  # noqa: E402
from coremltools.converters.mil.frontend.milproto import load as milproto  # noqa: E402
from coremltools.converters.mil.mil import types  # noqa: E402
from coremltools.converters.mil.mil.operation import VALUE, precondition  # noqa: E402
from coremltools.converters.mil.mil.ops.defs.iOS15 import reduction  # noqa: E402
from coremltools.converters.mil.mil.types.type_mapping import nptype_from_builtin  # noqa: E402
from coremltools.proto import MIL_pb2  # noqa: E402


# coremltools 9.0 hands NumPy a NumPy bool as keepdims when it evaluates a reduction, which
# NumPy 2.4 refuses; the same computation with a Python bool.
@precondition(allow=VALUE)
def _reduction_value(self):
    axes = tuple(self.axes.val) if self.axes is not None else None
    result = self.get_operator()(self.x.val, axis=axes, keepdims=bool(self.keep_dims.val))
    return result.astype(nptype_from_builtin(self.x.dtype))


reduction.ReductionAxes.value_inference = _reduction_value

MIL_TYPES = {MIL_pb2.FLOAT32: types.fp32, MIL_pb2.FLOAT16: types.fp16,
             MIL_pb2.INT32: types.int32, MIL_pb2.BOOL: types.bool, MIL_pb2.STRING: types.str}


def declared_type(value_type):
    t = value_type.tensorType
    shape = tuple(d.constant.size for d in t.dimensions)
    return MIL_TYPES[t.dataType], shape


def check_types(spec_block, program):
    """Every op's output type as coremltools infers it equals the type rlx wrote."""
    declared = {}
    for op in spec_block.operations:
        for out in op.outputs:
            declared[out.name] = declared_type(out.type)
    checked = 0
    for op in program.functions["main"].operations:
        for var in op.outputs:
            want = declared.get(var.name)
            if want is None:
                continue
            got = (var.dtype, tuple(int(d) for d in var.shape))
            if got != want:
                raise SystemExit(f"{op.op_type} {var.name}: coremltools infers "
                                 f"{types.builtin_to_string(got[0])}{list(got[1])}, rlx wrote "
                                 f"{types.builtin_to_string(want[0])}{list(want[1])}")
            checked += 1
    return checked


def const_op(name, array):
    op = MIL_pb2.Operation(type="const")
    out = op.outputs.add(name=name)
    dtype = {np.dtype(np.float32): MIL_pb2.FLOAT32, np.dtype(np.float16): MIL_pb2.FLOAT16,
             np.dtype(np.int32): MIL_pb2.INT32}[array.dtype]
    out.type.tensorType.dataType = dtype
    out.type.tensorType.rank = array.ndim
    for d in array.shape:
        out.type.tensorType.dimensions.add().constant.size = d
    val = op.attributes["val"]
    val.type.CopyFrom(out.type)
    tensor = val.immediateValue.tensor
    if dtype == MIL_pb2.FLOAT32:
        tensor.floats.values.extend(array.ravel().tolist())
    elif dtype == MIL_pb2.INT32:
        tensor.ints.values.extend(array.ravel().tolist())
    else:
        tensor.bytes.values = array.tobytes()
    name_attr = op.attributes["name"]
    name_attr.type.tensorType.dataType = MIL_pb2.STRING
    name_attr.immediateValue.tensor.strings.values.append(name)
    return op


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package")
    parser.add_argument("--inputs")
    parser.add_argument("--outputs")
    args = parser.parse_args()

    model = ct.models.MLModel(args.package, skip_model_load=True)
    spec = model.get_spec()
    weights = os.path.join(args.package, "Data", "com.apple.CoreML", "weights")
    function = spec.mlProgram.functions["main"]
    block = function.block_specializations[function.opset]
    described = [f.name for f in spec.description.input]
    if described != [i.name for i in function.inputs]:
        raise SystemExit(f"the model description's inputs {described} are not the program's")
    if [f.name for f in spec.description.output] != list(block.outputs):
        raise SystemExit("the model description's outputs are not the program's")
    program = milproto.load(spec, spec.specificationVersion, weights)
    checked = check_types(block, program)
    op_types = [op.type for op in block.operations if op.type != "const"]

    if args.inputs:
        # coremltools' value inference leaves constexpr ops (compressed weights) unevaluated, so
        # each becomes a const of the value coremltools' own decompression gives.
        decompressed = {op.outputs[0].name: op.materialized_val_inference()
                        for op in program.functions["main"].operations
                        if op.op_type.startswith("constexpr_")}
        for i, op in enumerate(block.operations):
            if op.type.startswith("constexpr_"):
                name = op.outputs[0].name
                block.operations[i].CopyFrom(const_op(name, np.asarray(decompressed[name])))
        given = read_safetensors(args.inputs)
        consts = [const_op(i.name, given[i.name]) for i in function.inputs]
        del function.inputs[:]
        ops = list(block.operations)
        del block.operations[:]
        block.operations.extend(consts + ops)
        program = milproto.load(spec, spec.specificationVersion, weights)
        results = {}
        produced = {v.name: v for op in program.functions["main"].operations for v in op.outputs}
        for op in program.functions["main"].operations:
            if all(v.val is not None for v in op.inputs.values() if hasattr(v, "val")) and \
                    any(v.val is None for v in op.outputs):
                raise SystemExit(f"coremltools computed no value for {op.outputs[0].name}: "
                                 f"{op.op_type} has no value inference there")
        for name in block.outputs:
            var = produced[name]
            value = np.asarray(var.val)
            if value.dtype == np.float64:
                value = value.astype(np.float32)
            if value.dtype == np.int64:
                value = value.astype(np.int32)
            if value.dtype == np.bool_:
                value = value.astype(np.int32)
            results[name] = value
        write_safetensors(args.outputs, results)
    print(json.dumps({"typed_values": checked, "op_types": op_types}))


if __name__ == "__main__":
    main()
