"""rlx train against NumPy+OpenBLAS and PyTorch on issue 16's MLP recipe, in interleaved rounds.

    python3 bench/train_mlp/run.py [--rlx build/bin/rlx] [--rounds 3] [--images 60000]
        [--peers numpy,torch,torch-jit,torch-compile] [--target cuda --torch-device cuda]

Each round runs every peer once per configuration, each in its own process; the table shows the
median images/s over rounds (steps x batch / time of the second epoch) and rlx's ratio to each
peer. Peers whose Python modules are missing are reported as such. PyTorch comes from the Python
that runs this (Debian's python3-torch 1.13 under /usr/bin/python3 here); nothing is installed.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = [("784,128,10", 128), ("784,256,128,10", 128), ("784,128,10", 1024)]


def run_rlx(rlx, sizes, batch, images, target):
    cmd = [rlx, "train", "--model", f"mlp:{sizes}", "--data", f"synthetic:{images}", "--batch", str(batch),
           "--epochs", "2", "--optimizer", "sgd:lr=0.02,momentum=0.9", "--json", "-q", "--target", target]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return doc["epoch_images_per_s"][-1]


def run_peer(peer, sizes, batch, images, device):
    cmd = [sys.executable, str(HERE / "peers.py"), peer, sizes, str(batch), str(images), device]
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
    args = ap.parse_args()
    peers = args.peers.split(",")
    rates = {(c, p): [] for c in CONFIGS for p in ["rlx"] + peers}
    problems = {}
    for r in range(args.rounds):
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


if __name__ == "__main__":
    main()
