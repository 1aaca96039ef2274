"""rlx train against NumPy+OpenBLAS and PyTorch on issue 16's MLP recipe, in interleaved rounds.

    python3 bench/train_mlp/run.py [--rlx build/bin/rlx] [--rounds 3] [--images 60000]
        [--peers numpy,torch,torch-jit,torch-compile,torch-pypi,torch-pypi-compile,jax]
        [--target cuda --torch-device cuda] [--no-peak]

Each round runs every peer once per configuration, each in its own process; the table shows the
median images/s over rounds (steps x batch / time of the second epoch) and rlx's ratio to each
peer. Peers whose Python modules are missing are reported as such. numpy, torch, torch-jit and
torch-compile run in the Python that runs this (Debian's python3-torch 1.13 under /usr/bin/python3
or bench/.venv); torch-pypi and torch-pypi-compile in PyPI's current PyTorch
(bench/.venvs/torch-pypi), jax in bench/.venvs/jax (`bash bench/setup.sh torch-pypi jax`);
nothing is installed here.

On the cpu target each round also measures the FMA peak of the machine's threads
(bench/gemm's FMA loop), and the table gives each rate in GFLOP/s of the step's products (forward,
weight gradients, and input gradients below the first layer) as a share of the median peak, so a
goal that would need more than the peak shows as such.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENVS = HERE.parent / ".venvs"
CONFIGS = [("784,128,10", 128), ("784,256,128,10", 128), ("784,128,10", 1024)]
# peer name -> (interpreter, peers.py's name for it); None: the Python running this script.
PEERS = {
    "numpy": (None, "numpy"),
    "torch": (None, "torch"),
    "torch-jit": (None, "torch-jit"),
    "torch-compile": (None, "torch-compile"),
    "torch-pypi": (VENVS / "torch-pypi" / "bin" / "python", "torch"),
    "torch-pypi-compile": (VENVS / "torch-pypi" / "bin" / "python", "torch-compile"),
    "jax": (VENVS / "jax" / "bin" / "python", "jax"),
}


def step_flop(sizes):
    """FLOP of one image's step in its matrix products: forward, weight gradient, and the input
    gradient of every layer but the first (nothing needs the gradient of the images)."""
    dims = [int(v) for v in sizes.split(",")]
    pairs = list(zip(dims[:-1], dims[1:]))
    return sum(4 * i * o for i, o in pairs) + sum(2 * i * o for i, o in pairs[1:])


def fma_peak(rlx):
    """GFLOP/s of bench/gemm's FMA loop on every CPU this process may use, or None."""
    build = Path(rlx).resolve().parent.parent
    binary = build / "bench" / "gemm" / "rlx_bench_gemm"
    subprocess.run(["cmake", "--build", str(build), "--target", "rlx_bench_gemm"], capture_output=True)
    if not binary.exists():
        return None
    r = subprocess.run([str(binary), "--threads", str(len(os.sched_getaffinity(0))), "--only", "peak"],
                       capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["fma_peak_gflops"]
    except (ValueError, KeyError):
        return None


def run_rlx(rlx, sizes, batch, images, target):
    cmd = [rlx, "train", "--model", f"mlp:{sizes}", "--data", f"synthetic:{images}", "--batch", str(batch),
           "--epochs", "2", "--optimizer", "sgd:lr=0.02,momentum=0.9", "--json", "-q", "--target", target]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return doc["epoch_images_per_s"][-1]


def run_peer(peer, sizes, batch, images, device):
    python, name = PEERS[peer]
    python = str(python) if python else sys.executable
    if not Path(python).exists():
        return None, f"{python} is missing (bash bench/setup.sh {'torch-pypi' if 'pypi' in peer else peer})"
    cmd = [python, str(HERE / "peers.py"), name, sizes, str(batch), str(images), device]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    return json.loads(r.stdout.strip().splitlines()[-1])["images_per_s"], None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx", default=str(HERE.parent.parent / "build" / "bin" / "rlx"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--images", type=int, default=60000)
    ap.add_argument("--peers", default="numpy,torch,torch-jit")
    ap.add_argument("--target", default="cpu", help="rlx train's --target")
    ap.add_argument("--torch-device", default="cpu", help="where the torch peers train (cpu, cuda)")
    ap.add_argument("--no-peak", action="store_true", help="do not measure the FMA peak")
    args = ap.parse_args()
    peers = args.peers.split(",")
    for p in peers:
        if p not in PEERS:
            raise SystemExit(f"unknown peer {p} (known: {', '.join(PEERS)})")
    rates = {(c, p): [] for c in CONFIGS for p in ["rlx"] + peers}
    problems = {}
    peaks = []
    measure_peak = args.target == "cpu" and not args.no_peak
    for r in range(args.rounds):
        if measure_peak:
            peak = fma_peak(args.rlx)
            if peak:
                peaks.append(peak)
                print(f"round {r + 1}: FMA peak {peak:.1f} GFLOP/s", file=sys.stderr)
        for sizes, batch in CONFIGS:
            c = (sizes, batch)
            rates[(c, "rlx")].append(run_rlx(args.rlx, sizes, batch, args.images, args.target))
            for p in peers:
                v, why = run_peer(p, sizes, batch, args.images, args.torch_device)
                if v is None:
                    problems[p] = why
                else:
                    rates[(c, p)].append(v)
            print(f"round {r + 1}: {sizes} b{batch}: " + ", ".join(
                f"{p} {rates[(c, p)][-1]:.0f}" for p in ["rlx"] + peers if rates[(c, p)]), file=sys.stderr)
    head = "| model | batch | rlx img/s | " + " | ".join(f"{p} img/s | rlx/{p}" for p in peers) + " |"
    print(head)
    print("|" + "---|" * (3 + 2 * len(peers)))
    for sizes, batch in CONFIGS:
        c = (sizes, batch)
        mine = statistics.median(rates[(c, "rlx")])
        row = f"| {sizes} | {batch} | {mine:.0f} |"
        for p in peers:
            if rates[(c, p)]:
                theirs = statistics.median(rates[(c, p)])
                row += f" {theirs:.0f} | {mine / theirs:.2f}x |"
            else:
                row += " - | - |"
        print(row)
    for p, why in problems.items():
        print(f"\n{p}: not measured ({why})")
    if peaks:
        peak = statistics.median(peaks)
        print(f"\nGFLOP/s of the step's products (median FMA peak {peak:.1f} GFLOP/s over "
              f"{len(peaks)} rounds, range {min(peaks):.1f}-{max(peaks):.1f}), as % of that peak:")
        print("\n| model | batch | FLOP/image | " + " | ".join(["rlx"] + peers) + " | 2x the fastest peer |")
        print("|" + "---|" * (5 + len(peers)))
        for sizes, batch in CONFIGS:
            c = (sizes, batch)
            flop = step_flop(sizes)
            cells = []
            for p in ["rlx"] + peers:
                if rates[(c, p)]:
                    g = statistics.median(rates[(c, p)]) * flop / 1e9
                    cells.append(f"{g:.0f} ({100 * g / peak:.0f}%)")
                else:
                    cells.append("-")
            best = max((statistics.median(rates[(c, p)]) for p in peers if rates[(c, p)]), default=0)
            need = 2 * best * flop / 1e9
            print(f"| {sizes} | {batch} | {flop} | " + " | ".join(cells) + f" | {need:.0f} ({100 * need / peak:.0f}%) |")


if __name__ == "__main__":
    main()
