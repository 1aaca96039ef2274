#!/usr/bin/env python3
"""Per-call overhead of rlx's Python API against its C++ API and ONNX Runtime's Python API, on
a graph too small to cost anything itself (x*y + x over 16 floats), so the time is the API's:
turning the inputs into tensors, the run's bookkeeping, handing the outputs back.

    cmake --build build --target rlx_bench_api_overhead
    PYTHONPATH=build/python RLX_PLUGIN_PATH=build/share/rlx/plugins.d \
        bench/.venv/bin/python bench/python_overhead.py [--rounds 5]

The C++ figures come from build/bench/api_overhead/rlx_bench_api_overhead (CompiledModel::run,
same graph), run as a subprocess in turn with the Python measurements, round after round; each
figure is the median over rounds of per-round medians. ORT is measured when `onnx` and
`onnxruntime` are importable (bench/.venv has them).
"""
import argparse
import json
import os
import statistics
import subprocess
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
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
        import onnx  # noqa: F401
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


def cpp_figures(binary, runs):
    if not os.access(binary, os.X_OK):
        return {}
    r = subprocess.run([binary, str(runs)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20000, help="calls per timed batch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpp", default=os.path.join(ROOT, "build", "bench", "api_overhead",
                                                      "rlx_bench_api_overhead"))
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
    into = {"b": np.empty(16, np.float32)}
    session = ort_session()
    if session is not None:
        np.testing.assert_array_equal(session.run(None, {"x": x, "y": y})[0], x * y + x)
    cases = [
        ("rlx compiled(**inputs)", lambda: compiled(x=x, y=y)),
        ("rlx compiled.run(dict)", lambda: compiled.run({"x": x, "y": y})),
        ("rlx compiled.run(dict, outputs={b: array})",
         lambda: compiled.run({"x": x, "y": y}, outputs=into)),
        ("rlx _rlx.Compiled.run(dict)", lambda: native.run({"x": x, "y": y})),
    ]
    if session is not None:
        cases.append(("onnxruntime InferenceSession.run",
                      lambda: session.run(None, {"x": x, "y": y})))
    rows = {}
    for _ in range(args.rounds):
        for key, us in cpp_figures(args.cpp, args.runs).items():
            rows.setdefault(f"C++ CompiledModel::{key[:-3]}", []).append(us)
        for name, fn in cases:
            rows.setdefault(name, []).append(per_call_us(fn, args.runs))
    medians = {name: statistics.median(v) for name, v in rows.items()}
    cpp = medians.get("C++ CompiledModel::run")
    ort = medians.get("onnxruntime InferenceSession.run")
    print(f"per-call time: median over {args.rounds} interleaved rounds of the median of 7 "
          f"batches of {args.runs} calls")
    print(f"  {'':<44} {'us':>8} {'vs C++ run':>11} {'vs ORT':>8}")
    for name, us in medians.items():
        vs_cpp = f"{us / cpp:10.2f}x" if cpp else f"{'-':>11}"
        vs_ort = f"{us / ort:7.2f}x" if ort else f"{'-':>8}"
        print(f"  {name:<44} {us:8.2f} {vs_cpp} {vs_ort}")
    if not cpp:
        print(f"  (no C++ figures: build {args.cpp})")
    if not ort:
        print("  (no ORT figures: onnx/onnxruntime not installed)")


if __name__ == "__main__":
    main()
