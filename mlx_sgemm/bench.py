"""The side-by-side benchmark: every kernel next to ``mx.matmul``, over sizes.

Each measurement is one kernel on one (M, N, K): the median time of repeated
runs after warm-up (:mod:`mlx_sgemm.timing`), GFLOP/s, the ratio to
``mx.matmul`` at the same precision, measured in the same process, and (on
sizes up to 8192^3) the error against float64.

On CUDA, ``mx.matmul``'s precision is fixed per process by MLX_ENABLE_TF32. The
benchmark runs with TF32 off (cuBLAS SGEMM: the float32 baseline) and times the
TF32 baseline (cuBLAS's default) in a child process with it on.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, fields

import numpy as np

import mlx.core as mx

from . import accuracy, adaptive, device, ops, peaks, timing

# Rows of C checked against float64: a random sample's error estimates the
# whole matrix's at a sliver of the cost of a float64 product.
ERROR_SAMPLE_ROWS = 256
# Largest M*N*K whose error is measured: every size of the recorded sweep (the
# issue's accuracy bound is at 4096^3 and 8192^3; 256 sampled rows of 8192^3
# are a ~17 GFLOP float64 product on the host, about a second).
ERROR_MAX_WORK = 8192**3

KERNELS = (*ops.STAGE_OPS, "matmul")  # the journey in order, then the adaptive op
PRECISIONS = adaptive.PRECISIONS
BASELINE = "mx.matmul"


@dataclass
class Measurement:
    device: str
    mlx_version: str
    date: str
    backend: str
    kernel: str
    precision: str
    M: int
    N: int
    K: int
    seconds: float
    gflops: float
    pct_peak: float | None
    x_matmul: float | None  # our speed over mx.matmul's at the same precision
    error: float | None  # ||C - ref||_F / || |A||B| ||_F, ref in float64

    @classmethod
    def columns(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def apple_gpu_cores() -> int | None:
    """GPU core count on macOS (MLX does not report it), else None."""
    if platform.system() != "Darwin":
        return None
    try:
        out = subprocess.run(["system_profiler", "SPDisplaysDataType"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if "Total Number of Cores" in line:
            return int(line.split(":")[1])
    return None


def device_peak(peak_gflops=None, bandwidth=None) -> peaks.DevicePeak:
    found = peaks.lookup(device.name(), apple_gpu_cores())
    return peaks.DevicePeak(
        peak_gflops or found.fp32_gflops, bandwidth or found.bandwidth_gbs,
        "command line" if peak_gflops or bandwidth else found.source,
    )


def sampled_error(c: mx.array, a: mx.array, b: mx.array, seed: int = 0) -> float:
    m = a.shape[0]
    rows = np.sort(np.random.default_rng(seed).choice(m, min(m, ERROR_SAMPLE_ROWS), replace=False))
    idx = mx.array(rows)
    return accuracy.relative_error(np.array(c[idx]), np.array(a[idx]), np.array(b))


def kernel_function(kernel: str, precision: str):
    return mx.matmul if kernel == BASELINE else ops.op_by_name(kernel, precision)


def _time_one(fn, a, b, repeats: int, error: bool):
    seconds = timing.median_seconds(lambda: fn(a, b), repeats=repeats)
    err = sampled_error(fn(a, b), a, b) if error else None
    return seconds, err


def tf32_baseline_seconds(shapes, repeats: int) -> dict[tuple[int, int, int], tuple[float, float | None]]:
    """mx.matmul with TF32 on, timed in a child process (MLX reads the flag once)."""
    code = (
        "import json,sys; from mlx_sgemm import bench; "
        "print(json.dumps(bench._baseline_in_this_process(json.loads(sys.argv[1]), int(sys.argv[2]))))"
    )
    env = dict(os.environ, MLX_ENABLE_TF32="1")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(shapes), str(repeats)],
                         env=env, capture_output=True, text=True, check=True).stdout
    return {tuple(s): (t, e) for s, t, e in json.loads(out.strip().splitlines()[-1])}


def _baseline_in_this_process(shapes, repeats):
    results = []
    for m, n, k in shapes:
        a, b = accuracy.random_operands((m, k), (k, n))
        mx.eval(a, b)
        t, e = _time_one(mx.matmul, a, b, repeats, m * n * k <= ERROR_MAX_WORK)
        results.append([[m, n, k], t, e])
    return results


def measure(
    shapes: list[tuple[int, int, int]],
    kernels: list[str],
    precisions: list[str],
    repeats: int = 20,
    peak: peaks.DevicePeak | None = None,
    progress: bool = True,
) -> list[Measurement]:
    """Time ``kernels`` (and mx.matmul) on every (M, N, K) in ``shapes``."""
    from tqdm import tqdm

    backend = device.backend()
    peak = peak or device_peak()
    name, version = device.name(), mx.__version__
    date = datetime.date.today().isoformat()
    # Which precisions really differ: TF32 exists on CUDA only.
    precisions = [p for p in precisions if p == "float32" or backend == device.CUDA]
    tf32_base = {}
    if "tf32" in precisions:
        tf32_base = tf32_baseline_seconds([list(s) for s in shapes], repeats)
    jobs = [(s, BASELINE, "float32") for s in shapes]
    for s in shapes:
        for kernel in kernels:
            for p in precisions if kernel == "matmul" else ["float32"]:
                jobs.append((s, kernel, p))
    results, base_seconds, operands = [], {}, {}
    for (m, n, k), kernel, precision in tqdm(jobs, desc="bench", disable=not progress, unit="run"):
        if (m, n, k) not in operands:
            operands.clear()  # one problem's operands alive at a time
            operands[(m, n, k)] = accuracy.random_operands((m, k), (k, n))
            mx.eval(operands[(m, n, k)])
        a, b = operands[(m, n, k)]
        seconds, err = _time_one(kernel_function(kernel, precision), a, b, repeats,
                                 m * n * k <= ERROR_MAX_WORK)
        if kernel == BASELINE:
            base_seconds[(m, n, k)] = seconds
        baseline = base_seconds[(m, n, k)] if precision == "float32" else tf32_base[(m, n, k)][0]
        rate = timing.gflops(m, n, k, seconds)
        results.append(Measurement(
            name, version, date, backend, kernel, precision, m, n, k, seconds, rate,
            100 * rate / peak.fp32_gflops if peak.fp32_gflops else None,
            baseline / seconds, err,
        ))
    for (m, n, k), (seconds, err) in tf32_base.items():
        rate = timing.gflops(m, n, k, seconds)
        results.append(Measurement(
            name, version, date, backend, BASELINE, "tf32", m, n, k, seconds, rate,
            100 * rate / peak.fp32_gflops if peak.fp32_gflops else None, 1.0, err,
        ))
    return results


def as_dicts(results: list[Measurement]) -> list[dict]:
    return [asdict(r) for r in results]
