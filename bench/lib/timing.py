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


def measure(prepare, warmup, runs, budget_s=None):
    """prepare() -> call; call() -> dict of NumPy outputs (forced to be computed).
    budget_s (quick mode) bounds the time after the first call: a peer slower than the budget
    allows gets fewer warm-ups and runs (at least one timed run); the counts used are returned."""
    t0 = time.perf_counter()
    call = prepare()
    prepare_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    outputs = call()
    first_ms = (time.perf_counter() - t0) * 1e3
    start = time.perf_counter()
    spent = 0.0
    warmed = 1
    while warmed < warmup and (budget_s is None or spent + first_ms / 1e3 < budget_s / 2):
        outputs = call()
        warmed += 1
        spent = time.perf_counter() - start
    times = []
    while len(times) < runs and (budget_s is None or not times or
                                 spent + times[-1] / 1e3 < budget_s):
        t0 = time.perf_counter()
        outputs = call()
        times.append((time.perf_counter() - t0) * 1e3)
        spent = time.perf_counter() - start
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
        "runs": len(times),
        "warmup": warmed,
    }
