#!/bin/bash
# rlx sgemm vs OpenBLAS (through NumPy) vs the FMA peak, measured in one run on 2 threads.
#   bench/gemm/run.sh [BUILD_DIR] [ROUNDS]     (default build, 3 rounds)
# Builds the rlx_bench_gemm target if needed, then runs ROUNDS rounds of (rlx, OpenBLAS) in
# turn and reports per shape the median over rounds: a table on stderr-free stdout and the JSON
# in BUILD_DIR/bench-gemm.json. Needs Debian's python3-numpy and libopenblas0-pthread
# (scripts/install-deps.sh does not install them: apt-get install python3-numpy
# libopenblas0-pthread). Set RLX_CPU_GEMM_ISA=avx2|portable to measure the other paths.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-3}
threads=${RLX_BENCH_THREADS:-2}
cmake --build "$build" --target rlx_bench_gemm >/dev/null 2>&1 || { echo "cannot build rlx_bench_gemm in $build" >&2; exit 1; }
bin="$build/bench/gemm/rlx_bench_gemm"
py=/usr/bin/python3
export OPENBLAS_NUM_THREADS=$threads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  "$bin" --threads "$threads" --reps 5 > "$tmp/rlx.$r.json"
  shapes=$($py -c 'import json,sys; print(json.dumps([[x["name"],x["M"],x["N"],x["K"]] for x in json.load(open(sys.argv[1]))["results"]]))' "$tmp/rlx.$r.json")
  $py "$here/openblas_numpy.py" "$shapes" 5 > "$tmp/blas.$r.json"
done
$py - "$tmp" "$rounds" "$build/bench-gemm.json" <<'PY'
import json, statistics, sys
tmp, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rlx = [json.load(open(f"{tmp}/rlx.{r}.json")) for r in range(1, rounds + 1)]
blas = [json.load(open(f"{tmp}/blas.{r}.json")) for r in range(1, rounds + 1)]
med = statistics.median
peak = med(x["fma_peak_gflops"] for x in rlx)
rows = []
for i, res in enumerate(rlx[0]["results"]):
    name = res["name"]
    g = med(x["results"][i]["gflops"] for x in rlx)
    gp = med(x["results"][i]["gflops_prepacked"] for x in rlx)
    ob = med(b["results"][name] for b in blas)
    rows.append({"name": name, "M": res["M"], "N": res["N"], "K": res["K"], "rlx_gflops": g,
                 "rlx_prepacked_gflops": gp, "openblas_gflops": ob,
                 "rlx_vs_openblas": round(g / ob, 2), "rlx_prepacked_vs_openblas": round(gp / ob, 2),
                 "rlx_of_fma_peak": round(g / peak, 2) if peak else None})
report = {"isa": rlx[0]["isa"], "threads": rlx[0]["threads"], "rounds": rounds,
          "fma_peak_gflops": peak, "openblas": blas[0]["blas"], "numpy": blas[0]["numpy"], "shapes": rows}
json.dump(report, open(out, "w"), indent=1)
print(f"isa {report['isa']}, {report['threads']} threads, FMA peak {peak:.1f} GFLOP/s, "
      f"median of {rounds} rounds; OpenBLAS: {report['openblas'][-1]}")
print(f"{'shape':22} {'M':>5} {'N':>5} {'K':>5} {'rlx':>7} {'prepack':>7} {'OpenBLAS':>8} "
      f"{'rlx/OB':>6} {'pre/OB':>6} {'rlx/peak':>8}")
for r in rows:
    print(f"{r['name']:22} {r['M']:5} {r['N']:5} {r['K']:5} {r['rlx_gflops']:7.1f} "
          f"{r['rlx_prepacked_gflops']:7.1f} {r['openblas_gflops']:8.1f} {r['rlx_vs_openblas']:6.2f} "
          f"{r['rlx_prepacked_vs_openblas']:6.2f} {r['rlx_of_fma_peak'] or 0:8.2f}")
print(f"JSON: {out}")
PY
