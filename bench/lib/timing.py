"""The one timing loop every peer runs, defined exactly as `rlx bench` measures rlx: the first
call (which compiles or traces for the input shapes) and warmup-1 further calls are not timed;
each of the timed calls is clocked on its own; p50 and p90 are NumPy's linearly interpolated
percentiles; compile_ms is the preparation (building the session, jitting, exporting the graph
to the peer's own format is excluded: it happens once outside the loop) plus what the first call
took beyond p50; peak_rss_mb is the worker process's peak resident memory in MB (10^6 bytes)."""
import resource
import time

import numpy as np


def peak_rss_mb():
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over an exec from the forking process, so
    # every worker would report at least the driver's own peak.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def measure(prepare, warmup, runs):
    """prepare() -> call; call() -> dict of NumPy outputs (forced to be computed)."""
    t0 = time.perf_counter()
    call = prepare()
    prepare_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    outputs = call()
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(warmup - 1):
        outputs = call()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        outputs = call()
        times.append((time.perf_counter() - t0) * 1e3)
    t = np.array(times)
    p50 = float(np.percentile(t, 50))
    return outputs, {
        "p50_ms": p50,
        "p90_ms": float(np.percentile(t, 90)),
        "min_ms": float(t.min()),
        "mean_ms": float(t.mean()),
        "max_ms": float(t.max()),
        "compile_ms": prepare_ms + max(0.0, first_ms - p50),
        "first_run_ms": first_ms,
        "peak_rss_mb": peak_rss_mb(),
        "runs": runs,
        "warmup": warmup,
    }
