"""rlx's Gaussian-splatting ops on the cuda target against gsplat (the reference CUDA library) on
the same GPU and scenes (bench/splat/run.py's), rounds interleaved, medians.

    python3 bench/gpu/splat_vs_gsplat.py --rlx-bench PATH/rlx_bench_splat [--gaussians 100000 1000000]

Run on the GPU machine with gsplat importable (it compiles its CUDA on first import: carry its
wheel and its pure-Python dependencies; TORCH_CUDA_ARCH_LIST=9.0 keeps the build short).
Both sides are timed host to host as rlx_bench_splat times rlx: the scene starts on the host, the
image (forward) or the image and the five gradients (forward + backward, loss = sum(image *
weights)) end on the host; gsplat's tensors are moved with .cuda() and .cpu() inside the timed
region. gsplat renders with rasterization(..., packed=False, near_plane=0.01) and RGB colours, rlx
with its ops' semantics (the 0.3-pixel low-pass both ways); the images are compared as a check,
not required to be equal (the two near-plane and radius rules differ at the edges).
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "splat"))
from run import run_rlx, write_scene  # noqa: E402


def gsplat_times(scene, weights, w, h, reps):
    from gsplat import rasterization

    def render(with_grad):
        t = {k: torch.from_numpy(scene[k]).cuda() for k in
             ("means", "quats", "scales", "opacities", "colors", "background")}
        if with_grad:
            for k in ("means", "quats", "scales", "opacities", "colors"):
                t[k].requires_grad_(True)
        f = scene["intrinsics"]
        K = torch.tensor([[f[0], 0, f[2]], [0, f[1], f[3]], [0, 0, 1]], device="cuda")[None]
        view = torch.from_numpy(scene["viewmat"]).cuda()[None]
        img, _, _ = rasterization(t["means"], t["quats"], t["scales"], t["opacities"], t["colors"],
                                  view, K, w, h, near_plane=0.01, packed=False,
                                  backgrounds=t["background"][None])
        if not with_grad:
            return img[0].cpu()
        loss = (img[0] * torch.from_numpy(weights).cuda()).sum()
        loss.backward()
        return img[0].cpu(), [t[k].grad.cpu() for k in ("means", "scales", "quats", "opacities", "colors")]

    render(False), render(True)  # warm-up (and the JIT build, the first time)
    out = {}
    for name, grad in (("forward_s", False), ("forward_backward_s", True)):
        times = []
        for _ in range(reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            render(grad)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        out[name] = times
    out["image"] = render(False).numpy()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx-bench", required=True)
    ap.add_argument("--gaussians", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    w, h = 1920, 1080
    rows = []
    for n in args.gaussians:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            scene, weights, capacity = write_scene(n, w, h, folder)
            rf, rb, gf, gb = [], [], [], []
            for _ in range(args.rounds):
                r = run_rlx(args.rlx_bench, folder, n, w, h, args.reps, capacity, "cuda")
                rf.append(statistics.median(r["forward_s"]))
                rb.append(statistics.median(r["forward_backward_s"]))
                g = gsplat_times(scene, weights, w, h, args.reps)
                gf.append(statistics.median(g["forward_s"]))
                gb.append(statistics.median(g["forward_backward_s"]))
            image = np.fromfile(folder / "rlx_image.f32", np.float32).reshape(h, w, 3) \
                if (folder / "rlx_image.f32").exists() else None
            diff = float(np.abs(image - g["image"]).max()) if image is not None else float("nan")
        row = {"gaussians": n, "rlx_forward_ms": 1e3 * statistics.median(rf),
               "gsplat_forward_ms": 1e3 * statistics.median(gf),
               "rlx_fwd_bwd_ms": 1e3 * statistics.median(rb),
               "gsplat_fwd_bwd_ms": 1e3 * statistics.median(gb), "image_max_abs_diff": diff}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| Gaussians | rlx forward | gsplat forward | rlx / gsplat | rlx fwd+bwd | gsplat fwd+bwd "
          "| rlx / gsplat |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['gaussians']:,} | {r['rlx_forward_ms']:.1f} ms | {r['gsplat_forward_ms']:.1f} ms "
              f"| {r['rlx_forward_ms'] / r['gsplat_forward_ms']:.2f} | {r['rlx_fwd_bwd_ms']:.1f} ms "
              f"| {r['gsplat_fwd_bwd_ms']:.1f} ms | {r['rlx_fwd_bwd_ms'] / r['gsplat_fwd_bwd_ms']:.2f} |")


if __name__ == "__main__":
    main()
