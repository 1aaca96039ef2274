#!/usr/bin/env python3
"""Per-call overhead of rlx's Python API against ONNX Runtime's, on a graph too small to cost
anything itself (x*y + x over 16 floats, bench/cpu_overhead's first graph), so the time is the
binding's: turning the inputs into tensors, the run's bookkeeping, handing the outputs back.

    PYTHONPATH=build/python python bench/python_overhead.py [--runs N]

Compare `model.run` of build/bench/cpu_overhead/rlx_bench_cpu_overhead (the C++ API, same graph)
for what the binding adds. ORT is measured when `onnx` and `onnxruntime` are importable.
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import rlx

GRAPH = """graph @t(%x: f32[16], %y: f32[16]) {
  %a = mul(%x, %y) : f32[16]
  %b = add(%a, %x) : f32[16]
  return %b
}
"""


def per_call_us(fn, runs, batches=7):
    fn()
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(runs):
            fn()
        times.append((time.perf_counter() - start) / runs * 1e6)
    return statistics.median(times)


def ort_session():
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [16])
    graph = helper.make_graph([helper.make_node("Mul", ["x", "y"], ["a"]),
                               helper.make_node("Add", ["a", "x"], ["b"])], "t", [x, y], [b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20000)
    args = parser.parse_args()
    x = np.arange(16, dtype=np.float32)
    y = np.full(16, 2, dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.rlx")
        with open(path, "w") as f:
            f.write(GRAPH)
        compiled = rlx.load(path).compile("cpu")
    np.testing.assert_array_equal(compiled(x=x, y=y)["b"], x * y + x)
    native = compiled._native
    rows = [("rlx compiled(**inputs)", per_call_us(lambda: compiled(x=x, y=y), args.runs)),
            ("rlx compiled.run(dict)", per_call_us(lambda: compiled.run({"x": x, "y": y}),
                                                   args.runs)),
            ("rlx _rlx.Compiled.run(dict)", per_call_us(lambda: native.run({"x": x, "y": y}),
                                                        args.runs))]
    session = ort_session()
    if session is not None:
        np.testing.assert_array_equal(session.run(None, {"x": x, "y": y})[0], x * y + x)
        rows.append(("onnxruntime InferenceSession.run",
                     per_call_us(lambda: session.run(None, {"x": x, "y": y}), args.runs)))
    else:
        rows.append(("onnxruntime InferenceSession.run", None))
    print(f"per-call time, median of 7 batches of {args.runs} calls")
    for name, us in rows:
        print(f"  {name:<36} {'(onnx/onnxruntime not installed)' if us is None else f'{us:8.2f} us'}")


if __name__ == "__main__":
    main()
