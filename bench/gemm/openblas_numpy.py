"""OpenBLAS sgemm through NumPy at the shapes rlx_bench_gemm measures; prints JSON.

Run with the Debian python3 (python3-numpy linked to libblas.so.3, which the alternatives system
points at libopenblas0-pthread). Refuses to report when the BLAS actually loaded is not OpenBLAS.
"""
import json
import os
import sys
import time

import numpy as np


def loaded_blas():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in path:
                libs.add(os.path.realpath(path))
    return sorted(libs)


def gflops(m, n, k, reps):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    flops = 2.0 * m * n * k
    inner = max(1, int(2e9 / flops))
    np.matmul(a, b, out=c)
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            np.matmul(a, b, out=c)
        runs.append(flops * inner / (time.perf_counter() - t0) / 1e9)
    return sorted(runs)[len(runs) // 2]


def main():
    shapes = json.loads(sys.argv[1])  # [[name, M, N, K], ...]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
    libs = loaded_blas()
    if not any("openblas" in p for p in libs):
        sys.exit(f"numpy is not using OpenBLAS (loaded: {libs}); install libopenblas0-pthread")
    out = {"numpy": np.__version__, "blas": libs,
           "threads": os.environ.get("OPENBLAS_NUM_THREADS"),
           "results": {name: round(gflops(m, n, k, reps), 1) for name, m, n, k in shapes}}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
