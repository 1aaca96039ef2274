#!/usr/bin/env python3
"""ONNX's backend node tests through the `rlx` command line alone.

For every case of the suite (test_*/model.onnx with test_data_set_0) whose graph inputs and
outputs are plain tensors, runs

    rlx run CASE/model.onnx --target T --inputs CASE/test_data_set_0 --output OUT.safetensors

and compares each output with output_N.pb the way onnx.backend.test does (and the project's own
runner, tests/frontends/onnx/node_suite.cpp): same dtype and shape, integers and booleans
exact, floats within atol + rtol * |expected| (rtol 1e-3, atol 1e-7), NaN where NaN is
expected. Prints the pass rate and how it compares with node_suite_passing.txt, the cases the
runner passes. Needs only numpy: the expected outputs and the models' input/output types are read
from their protobuf bytes here, independently of rlx.

    tests/conformance/onnx_node_suite_cli.py [--rlx build/bin/rlx] [--suite DIR] [--target cpu]
        [--jobs 2] [--filter SUBSTR] [--results FILE]

The suite defaults to Debian's libonnx-testdata (scripts/install-deps.sh installs it).
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PASSING = os.path.join(ROOT, "tests", "frontends", "onnx", "node_suite_passing.txt")
RTOL, ATOL = 1e-3, 1e-7


# --- protobuf wire format: just enough of ModelProto and TensorProto -------------------------

def varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def fields(buf):
    """{field number: [values]}: ints for varints, bytes for the rest."""
    out, pos = {}, 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def packed_varints(values):
    out = []
    for v in values:
        if isinstance(v, int):
            out.append(v)
        else:
            pos = 0
            while pos < len(v):
                x, pos = varint(v, pos)
                out.append(x)
    return out


# TensorProto.DataType -> (numpy dtype, safetensors dtype name)
DTYPES = {1: ("float32", "F32"), 2: ("uint8", "U8"), 3: ("int8", "I8"), 4: ("uint16", "U16"),
          5: ("int16", "I16"), 6: ("int32", "I32"), 7: ("int64", "I64"), 9: ("bool", "BOOL"),
          10: ("float16", "F16"), 11: ("float64", "F64"), 12: ("uint32", "U32"),
          13: ("uint64", "U64"), 16: ("bfloat16", "BF16")}


def signed64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def read_tensor(path):
    """output_N.pb -> (safetensors dtype name, numpy array as float64/int64/bool)."""
    with open(path, "rb") as f:
        t = fields(f.read())
    dims = [signed64(d) for d in packed_varints(t.get(1, []))]
    dt = t.get(2, [0])[0]
    if dt not in DTYPES:
        raise ValueError(f"data type {dt} has no comparison here")
    np_name, st_name = DTYPES[dt]
    count = int(np.prod(dims)) if dims else 1
    if 9 in t:  # raw_data, little-endian
        raw = t[9][0]
        if np_name == "bfloat16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, "<" + np.dtype(np_name).str[1:] if np_name != "bool" else "?")
    elif dt == 1:
        a = np.frombuffer(b"".join(t.get(4, [])), "<f4")
    elif dt == 11:
        a = np.frombuffer(b"".join(t.get(10, [])), "<f8")
    elif dt == 7:
        a = np.array([signed64(v) for v in packed_varints(t.get(7, []))], np.int64)
    elif dt in (12, 13):
        a = np.array(packed_varints(t.get(11, [])), np.uint64)
    elif dt in (10, 16):  # halves kept as their bits in int32_data
        bits = np.array(packed_varints(t.get(5, [])), np.uint16)
        a = bits.view(np.float16) if dt == 10 else (bits.astype(np.uint32) << 16).view(np.float32)
    else:  # int32_data holds the 8/16/32-bit integers and bools
        a = np.array([v - (1 << 64) if v >= 1 << 63 else v
                      for v in packed_varints(t.get(5, []))], np.int64)
        a = a.astype(np_name)
    if a.size != count:
        raise ValueError(f"{path}: {a.size} values for shape {dims}")
    return st_name, a.reshape(dims)


def value_infos(graph, number):
    """[(name, is plain tensor)] of GraphProto.input (11) or .output (12)."""
    out = []
    for vi in graph.get(number, []):
        v = fields(vi)
        name = v.get(1, [b""])[0].decode()
        ty = fields(v.get(2, [b""])[0])
        out.append((name, 1 in ty))  # TypeProto.tensor_type
    return out


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        st = info["dtype"]
        begin, end = info["data_offsets"]
        raw = body[begin:end]
        if st == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            np_name = {s: n for n, s in DTYPES.values()}.get(st)
            if np_name is None:
                raise ValueError(f"output {name} is {st}")
            a = np.frombuffer(raw, np_name if np_name != "bool" else "?")
        out[name] = (st, a.reshape(info["shape"]))
    return out


def compare(got, want):
    (gst, g), (wst, w) = got, want
    if gst != wst:
        return f"dtype {gst}, expected {wst}"
    if list(g.shape) != list(w.shape):
        return f"shape {list(g.shape)}, expected {list(w.shape)}"
    if g.dtype.kind in "fc":
        g64, w64 = g.astype(np.float64).ravel(), w.astype(np.float64).ravel()
        nan = np.isnan(w64) | np.isnan(g64)
        inf = ~nan & (np.isinf(w64) | np.isinf(g64))
        rest = ~nan & ~inf
        ok = np.ones(g64.shape, bool)
        ok[nan] = np.isnan(w64[nan]) & np.isnan(g64[nan])
        ok[inf] = w64[inf] == g64[inf]
        ok[rest] = np.abs(g64[rest] - w64[rest]) <= ATOL + RTOL * np.abs(w64[rest])
    else:
        ok = (g.ravel() == w.ravel())
    if not ok.all():
        i = int(np.argmin(ok))
        return f"element {i} is {g.ravel()[i]}, expected {w.ravel()[i]}"
    return None


def run_case(rlx, target, case_dir):
    """('PASS'|'FAIL'|'SKIP', message, frozen inputs)."""
    with open(os.path.join(case_dir, "model.onnx"), "rb") as f:
        model = fields(f.read())
    graph = fields(model[7][0])
    inputs, outputs = value_infos(graph, 11), value_infos(graph, 12)
    if not all(plain for _, plain in inputs + outputs):
        return "SKIP", "sequence/optional/map values", []
    data = os.path.join(case_dir, "test_data_set_0")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.safetensors")
        cmd = [rlx, "run", os.path.join(case_dir, "model.onnx"), "--target", target,
               "--inputs", data, "--output", out, "--json"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return "FAIL", "timed out", []
        if p.returncode != 0:
            lines = [l for l in p.stderr.splitlines() if l.startswith("error")] or \
                p.stderr.splitlines() or ["exit %d" % p.returncode]
            return "FAIL", lines[0][:300], []
        frozen = json.loads(p.stdout).get("frozen_inputs", [])
        got = read_safetensors(out)
        for i, (name, _) in enumerate(outputs):
            try:
                want = read_tensor(os.path.join(data, f"output_{i}.pb"))
            except Exception as e:  # noqa: BLE001 - reported as the case's failure
                return "FAIL", f"expected output {i}: {e}", frozen
            if name not in got:
                return "FAIL", f"output '{name}' is missing", frozen
            diff = compare(got[name], want)
            if diff:
                return "FAIL", f"output '{name}': {diff}", frozen
    return "PASS", "", frozen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rlx", default=os.path.join(ROOT, "build", "bin", "rlx"))
    ap.add_argument("--suite", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--filter", default="")
    ap.add_argument("--results", default="onnx_node_cli_results.txt",
                    help="where every case's verdict is written")
    a = ap.parse_args()
    if not os.path.isdir(a.suite):
        sys.exit(f"no ONNX node tests at {a.suite}: install libonnx-testdata "
                 "(scripts/install-deps.sh) or give --suite DIR")
    cases = sorted(d for d in os.listdir(a.suite)
                   if a.filter in d and os.path.exists(os.path.join(a.suite, d, "model.onnx")))
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda c: (c, run_case(a.rlx, a.target, os.path.join(a.suite, c))),
                                cases))
    passing = set()
    with open(PASSING) as f:
        passing = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    plain = passed = frozen_cases = 0
    with open(a.results, "w") as log:
        for name, (verdict, message, frozen) in results:
            log.write(f"{verdict} {name}" + (f" (froze {', '.join(frozen)})" if frozen else "") +
                      (f": {message}" if message else "") + "\n")
            if verdict == "SKIP":
                continue
            plain += 1
            passed += verdict == "PASS"
            frozen_cases += verdict == "PASS" and bool(frozen)
    cli_pass = {n for n, (v, _, _) in results if v == "PASS"}
    runner = {n for n in passing if not a.filter or a.filter in n}
    print(f"rlx run: {passed} of {plain} plain-tensor cases pass "
          f"({100.0 * passed / max(plain, 1):.1f}%); {frozen_cases} of them froze "
          f"shape-deciding inputs; {len(results) - plain} cases use sequences, optionals or maps "
          f"and are not counted")
    print(f"the runner (node_suite_passing.txt): {len(runner)} "
          f"({100.0 * len(runner) / max(plain, 1):.1f}%)")
    only_runner = sorted(runner - cli_pass)
    only_cli = sorted(cli_pass - runner)
    print(f"passing in the runner, failing here ({len(only_runner)}): {' '.join(only_runner)}")
    print(f"passing here, not listed for the runner ({len(only_cli)}): {' '.join(only_cli)}")
    print(f"every case's verdict: {a.results}")


if __name__ == "__main__":
    main()
