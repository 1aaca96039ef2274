"""rlx's scientific ops against SciPy and NumPy in one process, on the same matrices.

    .venv/bin/pip install scipy==1.17.1        # the peer (NumPy comes with scripts/test.sh)
    RLX_PLUGIN_PATH=build/share/rlx/plugins.d PYTHONPATH=build/python OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python bench/sci/sci_bench.py [--quick] [--rounds R] [--problems 256^2,...]
        [--sizes 512,...] [--no-lu] [--tol T]

Sparse: 2D Poisson 256^2 and 1024^2 unknowns (5-point), 3D Poisson 64^3 (7-point).
  lu:  rlx SparseSolve (UMFPACK, and KLU; f64) vs scipy.sparse.linalg.spsolve (SuperLU)
  cg:  rlx CG, and PCG (Jacobi), vs scipy.sparse.linalg.cg (same rtol, same iteration limit)
Dense (f64): LU, Cholesky, SVD, Eigh at 512, 1024, 2048 vs scipy.linalg.lu_factor, cholesky,
numpy.linalg.svd, numpy.linalg.eigh.
Rounds are interleaved (rlx, peer, rlx, peer, ...); each figure is the median over rounds of one
call after one warm-up call; compile time is excluded (one compile per shape, outside the
loop, and the first call, which builds rlx's loop kernels, is not timed). The ratio is peer time
/ rlx time (> 1: rlx is faster).
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import rlx


def poisson(shape):
    """The 2*d+1-point Laplacian on a grid of `shape` (zero Dirichlet boundary), CSR."""
    mats = [sp.diags([-1, 2, -1], [-1, 0, 1], shape=(n, n)) for n in shape]
    eye = [sp.identity(n) for n in shape]
    a = None
    for k in range(len(shape)):
        term = None
        for j in range(len(shape)):
            f = mats[j] if j == k else eye[j]
            term = f if term is None else sp.kron(term, f)
        a = term if a is None else a + term
    a = a.tocsr()
    a.sort_indices()
    return a


def compile_text(text, tmp):
    path = Path(tmp) / f"g{abs(hash(text))}.rlx"
    path.write_text(text)
    return rlx.load(str(path)).compile(target="cpu")


def csr_graph(op, a, dtype, extra_out="", attrs=""):
    n, nnz = a.shape[0], a.nnz
    outs = "%x" + extra_out
    types = f"{dtype}[{n}]" + (", i32[], " + dtype + "[]" if extra_out else "")
    return (f"graph @t(%p: i32[{n + 1}], %i: i32[{nnz}], %v: {dtype}[{nnz}], %b: {dtype}[{n}]) {{\n"
            f"  {outs} = {op}(%p, %i, %v, %b){attrs} : {types}\n  return {outs}\n}}\n")


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1e3, out


def interleave(cases, rounds):
    """cases: {name: fn}; returns {name: median ms} over `rounds` interleaved rounds."""
    times = {k: [] for k in cases}
    for fn in cases.values():  # warm-up: rlx compiles its loop kernels on the first call
        fn()
    for _ in range(rounds):
        for k, fn in cases.items():
            times[k].append(timed(fn)[0])
    return {k: statistics.median(v) for k, v in times.items()}


def residual(a, x, b):
    return float(np.linalg.norm(a @ x - b) / np.linalg.norm(b))


def sparse_rows(name, a, rounds, tmp, tol, max_iter, with_lu=True):
    n = a.shape[0]
    b = np.ones(n)
    feed = {"p": a.indptr.astype(np.int32), "i": a.indices.astype(np.int32), "v": a.data, "b": b}
    lu = compile_text(csr_graph("SparseSolve", a, "f64"), tmp)
    klu = compile_text(csr_graph("SparseSolve", a, "f64", attrs=' {solver = "klu"}'), tmp)
    cg_attrs = lambda pre: f' {{max_iter = {max_iter}, preconditioner = "{pre}", tol = {tol}}}'
    cg = compile_text(csr_graph("CG", a, "f64", ", %it, %res", cg_attrs("none")), tmp)
    pcg = compile_text(csr_graph("CG", a, "f64", ", %it, %res", cg_attrs("jacobi")), tmp)
    csc = a.tocsc()
    iters = {}

    def scipy_cg(m=None, key="scipy_cg"):
        count = [0]
        def cb(_):
            count[0] += 1
        x, info = spla.cg(a, b, rtol=tol, atol=0.0, maxiter=max_iter, M=m, callback=cb)
        iters[key] = count[0]
        return x

    dinv = sp.diags(1.0 / a.diagonal())
    cases = {
        "rlx_lu": lambda: lu(**feed),
        "rlx_klu": lambda: klu(**feed),
        "scipy_spsolve": lambda: spla.spsolve(csc, b),
        "rlx_cg": lambda: cg(**feed),
        "scipy_cg": lambda: scipy_cg(),
        "rlx_pcg": lambda: pcg(**feed),
        "scipy_pcg": lambda: scipy_cg(dinv, "scipy_pcg"),
    }
    if not with_lu:
        del cases["rlx_lu"], cases["rlx_klu"], cases["scipy_spsolve"]
    med = interleave(cases, rounds)
    out_cg, out_pcg = cg(**feed), pcg(**feed)
    checks = {
        "rlx_lu_residual": residual(a, lu(**feed)["x"], b) if with_lu else None,
        "rlx_cg_residual": residual(a, out_cg["x"], b),
        "rlx_cg_iterations": int(out_cg["it"]),
        "rlx_pcg_iterations": int(out_pcg["it"]),
        "scipy_cg_iterations": iters.get("scipy_cg"),
        "scipy_pcg_iterations": iters.get("scipy_pcg"),
    }
    rows = [] if not with_lu else [
        (name, "SparseSolve (UMFPACK)", med["rlx_lu"], "spsolve (SuperLU)", med["scipy_spsolve"]),
        (name, "SparseSolve (KLU)", med["rlx_klu"], "spsolve (SuperLU)", med["scipy_spsolve"])]
    rows += [
        (name, "cg", med["rlx_cg"], "cg", med["scipy_cg"]),
        (name, "pcg", med["rlx_pcg"], "cg(M=jacobi)", med["scipy_pcg"]),
    ]
    return rows, checks


def dense_rows(n, rounds, tmp, ops):
    rng = np.random.default_rng(n)
    g = rng.standard_normal((n, n))
    spd = g @ g.T + n * np.eye(n)
    def graph(op, outs, types):
        return (f"graph @t(%a: f64[{n},{n}]) {{\n  {outs} = {op}(%a) : {types}\n"
                f"  return {outs}\n}}\n")
    sq = f"f64[{n},{n}]"
    lu = compile_text(graph("LU", "%lu, %piv", f"{sq}, i32[{n}]"), tmp)
    chol = compile_text(graph("Cholesky", "%l", sq), tmp)
    svd = compile_text(graph("SVD", "%u, %s, %vt", f"{sq}, f64[{n}], {sq}"), tmp)
    eigh = compile_text(graph("Eigh", "%w, %v", f"f64[{n}], {sq}"), tmp)
    cases = {
        "rlx_lu": lambda: lu(a=g), "scipy_lu_factor": lambda: scipy.linalg.lu_factor(g),
        "rlx_chol": lambda: chol(a=spd),
        "scipy_cholesky": lambda: scipy.linalg.cholesky(spd, lower=True),
        "rlx_svd": lambda: svd(a=g),
        "numpy_svd": lambda: np.linalg.svd(g, full_matrices=False),
        "rlx_eigh": lambda: eigh(a=spd), "numpy_eigh": lambda: np.linalg.eigh(spd),
    }
    pairs = {"lu": ("rlx_lu", "scipy_lu_factor"), "cholesky": ("rlx_chol", "scipy_cholesky"),
             "svd": ("rlx_svd", "numpy_svd"), "eigh": ("rlx_eigh", "numpy_eigh")}
    cases = {k: v for k, v in cases.items()
             if any(k in pairs[op] for op in ops)}
    med = interleave(cases, rounds)
    name = f"dense {n}"
    rows = {"lu": (name, "LU", med.get("rlx_lu"), "scipy lu_factor", med.get("scipy_lu_factor")),
            "cholesky": (name, "Cholesky", med.get("rlx_chol"), "scipy cholesky",
                         med.get("scipy_cholesky")),
            "svd": (name, "SVD", med.get("rlx_svd"), "numpy svd", med.get("numpy_svd")),
            "eigh": (name, "Eigh", med.get("rlx_eigh"), "numpy eigh", med.get("numpy_eigh"))}
    return [rows[op] for op in ops]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--sizes", help="dense sizes, e.g. 512,1024")
    ap.add_argument("--no-lu", action="store_true", help="sparse: cg and pcg only")
    ap.add_argument("--problems", help="sparse problems by size, e.g. 256^2,64^3,1024^2")
    ap.add_argument("--dense-ops", default="lu,cholesky,svd,eigh",
                    help="dense ops to race, e.g. lu or lu,svd")
    ap.add_argument("--big-rounds", type=int, default=1,
                    help="rounds for problems above 300k unknowns and dense 2048")
    args = ap.parse_args()
    problems = ([("2D Poisson 64^2", (64, 64))] if args.quick else
                [("2D Poisson 256^2", (256, 256)), ("3D Poisson 64^3", (64, 64, 64)),
                 ("2D Poisson 1024^2", (1024, 1024))])
    sizes = [128] if args.quick else [512, 1024, 2048]
    if args.sizes is not None:  # "" runs no dense size
        sizes = [int(v) for v in args.sizes.split(",") if v]
    if args.problems:
        problems = [p for p in problems if p[0].split()[-1] in args.problems.split(",")]
    print(f"numpy {np.__version__}, scipy {scipy.__version__}; tol {args.tol}")
    print("| problem | rlx op | rlx ms | peer | peer ms | peer / rlx |")
    print("|---|---|---|---|---|---|", flush=True)

    def show(rows):
        for prob, op, rms, peer, pms in rows:
            print(f"| {prob} | {op} | {rms:.1f} | {peer} | {pms:.1f} | {pms / rms:.2f} |",
                  flush=True)

    checks = {}
    with tempfile.TemporaryDirectory() as tmp:
        def sparse(name, shape):
            rounds = args.rounds if np.prod(shape) <= 300_000 else args.big_rounds
            r, c = sparse_rows(name, poisson(shape), rounds, tmp, args.tol, 20000,
                               with_lu=not args.no_lu)
            checks[name] = c
            show(r)
        small = [p for p in problems if np.prod(p[1]) <= 300_000]
        big = [p for p in problems if np.prod(p[1]) > 300_000]
        for name, shape in small:
            sparse(name, shape)
        for n in sizes:
            show(dense_rows(n, args.rounds if n <= 1024 else args.big_rounds, tmp, args.dense_ops.split(",")))
        for name, shape in big:
            sparse(name, shape)
    for name, c in checks.items():
        print(f"{name}: {json.dumps(c)}")

if __name__ == "__main__":
    main()
