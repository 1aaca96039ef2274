"""rlx's dense linear algebra on the cuda target (cuSOLVER through rlx's library calls) against
PyTorch's torch.linalg on the same GPU, on the same matrices, rounds interleaved.

    python3 bench/gpu/linalg.py [--sizes 1024,2048,4096] [--dtypes f64,f32] [--rounds 5]

Run on the GPU machine after `. bench/gpu/on_device.sh` (rlx on PATH). Each rlx figure is
`rlx bench GRAPH --target cuda --json`'s device_p50_ms: CUDA events around one whole run,
inputs copied in and outputs out included, over --runs runs. The torch figure is timed the same
way: host array in, torch.linalg on the device, result back on the host, CUDA events around it,
median over the same number of calls after a warm-up. Ratio = torch / rlx (> 1: rlx is faster).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

OPS = {
    # op: (rlx outputs' types as a function of n and the dtype, torch call)
    "Cholesky": (lambda n, d: f"{d}[{n},{n}]", lambda a: torch.linalg.cholesky(a)),
    "LU": (lambda n, d: f"{d}[{n},{n}], i32[{n}]", lambda a: torch.linalg.lu_factor(a)),
    "Solve": (lambda n, d: f"{d}[{n},1]", None),
    "Eigh": (lambda n, d: f"{d}[{n}], {d}[{n},{n}]", lambda a: torch.linalg.eigh(a)),
    "SVD": (lambda n, d: f"{d}[{n},{n}], {d}[{n}], {d}[{n},{n}]",
            lambda a: torch.linalg.svd(a, full_matrices=False)),
}


def graph(op, n, d):
    outs = OPS[op][0](n, d)
    names = ", ".join(f"%r{i}" for i in range(outs.count("[")))
    if op == "Solve":
        return (f"graph @g(%a: {d}[{n},{n}], %b: {d}[{n},1]) {{\n  %r0 = Solve(%a, %b) : {outs}\n"
                f"  return %r0\n}}\n")
    return f"graph @g(%a: {d}[{n},{n}]) {{\n  {names} = {op}(%a) : {outs}\n  return {names}\n}}\n"


def rlx_ms(tmp, op, n, d, a, b, runs):
    g = Path(tmp) / f"{op}_{n}_{d}.rlx"
    g.write_text(graph(op, n, d))
    np.save(Path(tmp) / "a.npy", a)
    args = ["rlx", "bench", str(g), "--target", "cuda", "--input", f"a=@{tmp}/a.npy",
            "--warmup", "2", "--runs", str(runs), "--json"]
    if b is not None:
        np.save(Path(tmp) / "b.npy", b)
        args += ["--input", f"b=@{tmp}/b.npy"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["device_p50_ms"]


def torch_ms(op, a, b, runs):
    def call():
        ta = torch.from_numpy(a).cuda()
        if op == "Solve":
            r = (torch.linalg.solve(ta, torch.from_numpy(b).cuda()),)
        else:
            r = OPS[op][1](ta)
        return [t.cpu() for t in (r if isinstance(r, tuple) else (r,))]

    call()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1024,2048,4096")
    p.add_argument("--dtypes", default="f64,f32")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'op':9} {'dtype':5} {'n':>5} {'rlx ms':>9} {'torch ms':>9} {'torch/rlx':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for d in args.dtypes.split(","):
            np_type = np.float64 if d == "f64" else np.float32
            for n in map(int, args.sizes.split(",")):
                m = rng.standard_normal((n, n))
                spd = (m @ m.T + n * np.eye(n)).astype(np_type)
                b = rng.standard_normal((n, 1)).astype(np_type)
                for op in args.ops.split(","):
                    a = spd if op in ("Cholesky", "Eigh") else m.astype(np_type)
                    r, t = [], []
                    for _ in range(args.rounds):  # interleaved
                        r.append(rlx_ms(tmp, op, n, d, a, b if op == "Solve" else None, args.runs))
                        t.append(torch_ms(op, a, b, args.runs))
                    rm, tm = statistics.median(r), statistics.median(t)
                    print(f"{op:9} {d:5} {n:5d} {rm:9.2f} {tm:9.2f} {tm / rm:9.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
