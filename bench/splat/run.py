#!/usr/bin/env python3
"""Gaussian splatting on the cpu: rlx against the NumPy implementation in numpy_splat.py, in
interleaved rounds on the same scene, medians reported. `--target cuda` times rlx on the cuda
target instead (its native kernels; the times include copying the scene to the device and the
results back), still checked against NumPy.

    cmake --build build --target rlx_bench_splat rlx_target_cpu
    /work/main/.venv/bin/python bench/splat/run.py --gaussians 100000 1000000 --rounds 3

Each round runs rlx's program (one process: forward, then forward + backward, `--reps` times
each) and then NumPy's forward and forward + backward once each. Before timing, rlx's image and
gradients are compared with NumPy's (max abs error of the image; relative L2 error of each
gradient). Scenes: N random Gaussians in a camera frustum at 1920x1080, fixed seed, their
scales shrinking with sqrt(N) so that every N covers the screen alike."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import numpy_splat  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def make_scene(n, width, height, seed=0):
    rng = np.random.default_rng(seed)
    f = 0.8 * width
    z = rng.uniform(2, 10, n)
    x = (rng.uniform(0, width, n) - width / 2) * z / f
    y = (rng.uniform(0, height, n) - height / 2) * z / f
    return {
        "means": np.stack([x, y, z], 1).astype(np.float32),
        # Denser scenes have smaller splats: the scale shrinks with sqrt(N) so that the screen
        # coverage (and the (tile, Gaussian) pairs per pixel) stays that of 100k Gaussians.
        "scales": (np.exp(rng.uniform(-5.5, -3.5, (n, 3))) * np.sqrt(1e5 / n)).astype(np.float32),
        "quats": rng.normal(size=(n, 4)).astype(np.float32),
        "opacities": rng.uniform(0.05, 0.95, n).astype(np.float32),
        "colors": rng.uniform(0, 1, (n, 3)).astype(np.float32),
        "background": np.array([0.1, 0.2, 0.3], np.float32),
        "viewmat": np.eye(4, dtype=np.float32),
        "intrinsics": np.array([f, f, width / 2, height / 2], np.float32),
    }


def write_scene(n, width, height, folder):
    """The scene of n Gaussians and the loss weights, written as rlx_bench_splat reads them into
    `folder`; returns (scene, weights, TileBin's capacity: just above the pairs)."""
    scene = make_scene(n, width, height)
    capacity = pair_count(scene, width, height) + 1024
    weights = np.random.default_rng(1).uniform(-1, 1, (height, width, 3)).astype(np.float32)
    for k, v in {**scene, "weights": weights}.items():
        v.astype(np.float32).tofile(Path(folder) / f"{k}.f32")
    return scene, weights, capacity


def pair_count(scene, width, height):
    """(tile, Gaussian) pairs of the scene: TileBin's capacity is set just above it."""
    _, _, _, ok, saved = numpy_splat.project(scene["means"], scene["scales"], scene["quats"],
                                             scene["viewmat"], scene["intrinsics"], width, height)
    x0, y0, x1, y1 = saved["rect"]
    return int(((x1 - x0) * (y1 - y0))[ok].sum())


def run_rlx(exe, folder, n, width, height, reps, capacity, target):
    env = dict(os.environ, RLX_PLUGIN_PATH=str(ROOT / "build/share/rlx/plugins.d"),
               RLX_SPLAT_CAPACITY=str(capacity))
    out = subprocess.run([str(exe), str(folder), str(n), str(width), str(height), str(reps),
                          target], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rlx-bench", default=str(ROOT / "build/bench/splat/rlx_bench_splat"))
    ap.add_argument("--gaussians", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3, help="rlx runs per round (median taken)")
    ap.add_argument("--target", default="cpu", help="the rlx target timed (cpu, cuda)")
    args = ap.parse_args()
    w, h = args.width, args.height
    rows = []
    for n in args.gaussians:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            scene, weights, capacity = write_scene(n, w, h, folder)
            rf, rb, nf, nb = [], [], [], []
            for r in range(args.rounds):
                got = run_rlx(args.rlx_bench, folder, n, w, h, args.reps, capacity, args.target)
                rf.append(statistics.median(got["forward_s"]))
                rb.append(statistics.median(got["forward_backward_s"]))
                t0 = time.perf_counter()
                image, _ = numpy_splat.forward(scene, w, h)
                nf.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                _, grads = numpy_splat.forward_backward(scene, w, h, weights)
                nb.append(time.perf_counter() - t0)
                if r == 0:
                    mine = np.fromfile(folder / "rlx_image.f32", np.float32).reshape(h, w, 3)
                    flat = np.fromfile(folder / "rlx_grads.f32", np.float32)
                    errs, at = [], 0
                    for g in grads:
                        part = flat[at:at + g.size].reshape(g.shape)
                        at += g.size
                        errs.append(float(np.linalg.norm(part - g) / max(np.linalg.norm(g), 1e-30)))
                    img_err = float(np.abs(mine - image).max())
                    print(f"N={n}: image max abs error {img_err:.2e}; gradient relative L2 errors "
                          f"(means, scales, quats, opacities, colors) "
                          + ", ".join(f"{e:.1e}" for e in errs), flush=True)
                print(f"N={n} round {r + 1}: rlx fwd {rf[-1]:.3f}s fwd+bwd {rb[-1]:.3f}s | numpy "
                      f"fwd {nf[-1]:.3f}s fwd+bwd {nb[-1]:.3f}s", flush=True)
        row = {"gaussians": n, "target": args.target, "rlx_forward_s": statistics.median(rf),
               "rlx_forward_backward_s": statistics.median(rb),
               "numpy_forward_s": statistics.median(nf),
               "numpy_forward_backward_s": statistics.median(nb),
               "image_max_abs_error": img_err, "gradient_rel_l2_errors": errs}
        rows.append(row)
    print(f"\nrlx on {args.target}")
    print("\n| Gaussians | rlx forward | NumPy forward | speed-up | rlx fwd+bwd | NumPy fwd+bwd | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['gaussians']:,} | {r['rlx_forward_s'] * 1e3:.0f} ms | {r['numpy_forward_s'] * 1e3:.0f} ms"
              f" | {r['numpy_forward_s'] / r['rlx_forward_s']:.1f}x | {r['rlx_forward_backward_s'] * 1e3:.0f} ms"
              f" | {r['numpy_forward_backward_s'] * 1e3:.0f} ms"
              f" | {r['numpy_forward_backward_s'] / r['rlx_forward_backward_s']:.1f}x |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
