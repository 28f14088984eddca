"""The side-by-side benchmark: every kernel next to ``mx.matmul``, over sizes.

Each measurement is one kernel on one (M, N, K) and operand dtype: the median
time of repeated runs after warm-up (:mod:`mlx_sgemm.bench.timing`), one product
per evaluation by default (``calls``: "one at a time", as a user calls it) or
several independent ones ("independent"), GFLOP/s, the ratio to ``mx.matmul``
at the same precision on the same operands, measured in the same process, and
(on sizes up to 8192^3) the error against float64.

Each kernel is timed side by side with ``mx.matmul`` at its precision, in the
same process, in alternating rounds. On CUDA, ``mx.matmul``'s precision is
fixed per process by MLX_ENABLE_TF32: the benchmark runs with TF32 off (cuBLAS
SGEMM: the float32 baseline), and times ``matmul(precision="tf32")`` beside
cuBLAS's TF32 in a child process with it on.

Precision applies to float32 operands only. float16 and bfloat16 operands
(``dtypes``; both operands of the one dtype) are measured once per dtype: every
kernel as a user calls it, ``matmul`` at its default precision, beside
``mx.matmul`` on the same operands (cuBLAS's half GEMM with float32
accumulation, which MLX_ENABLE_TF32 does not touch); their rows' precision
column is :data:`HALF_PRECISION`. Their values are exact in float32 and in
TF32 alike, so a TF32 row would time another kernel, not another accuracy.
The error is against float64 of the operands' values; the output is rounded to
the half dtype, which dominates it, so mx.matmul's row beside it is the
measure to compare with.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import subprocess
import statistics
import sys
from dataclasses import asdict, dataclass, fields

import mlx.core as mx
import numpy as np

from .. import ops
from ..dispatch import device, kernel_choice
from ..dispatch.problem import OPERAND_DTYPES
from . import accuracy, peaks, timing

# Rows of C checked against float64: a random sample's error estimates the
# whole matrix's at a sliver of the cost of a float64 product.
ERROR_SAMPLE_ROWS = 256
# Largest M*N*K whose error is measured: every size of the recorded sweep (the
# issue's accuracy bound is at 4096^3 and 8192^3; 256 sampled rows of 8192^3
# are a ~17 GFLOP float64 product on the host, about a second).
ERROR_MAX_WORK = 8192**3

KERNELS = (*ops.STAGE_OPS, "matmul")  # the journey in order, then the adaptive op
PRECISIONS = kernel_choice.PRECISIONS
BASELINE = "mx.matmul"
DTYPES = tuple(str(d).rpartition(".")[2] for d in OPERAND_DTYPES)  # float32 first
# The precision column of half-dtype rows: matmul's default, the call a user makes.
HALF_PRECISION = "float32"
CALLS = timing.CALLS


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
    # Columns recorded runs before these lack (results.read_csv fills them in):
    peak_kind: str | None = None  # whose peak pct_peak is of: FP32, TF32, 3xTF32, FP16 or 3xFP16 (bench.peaks.units)
    spread: float | None = None  # (slowest - fastest round) / median round (bench.timing.spread)
    mlx_sgemm_version: str | None = None
    commit: str | None = None  # the checkout's commit, "-dirty" with changes; "" outside git
    # Runs recorded before these two timed float32 operands as independent
    # calls (results.read_csv fills them in):
    dtype: str | None = None  # both operands' dtype: float32, float16 or bfloat16
    calls: str | None = None  # "one at a time" or "independent" (bench.timing.CALLS)

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
    """This device's peaks (its datasheet's), the FP32 rate and the bandwidth
    overridden where given; its other rates (TF32, INT8, FP16) kept."""
    found = peaks.lookup(device.name(), apple_gpu_cores())
    if not (peak_gflops or bandwidth):
        return found
    return dataclasses.replace(found, fp32_gflops=peak_gflops or found.fp32_gflops,
                               bandwidth_gbs=bandwidth or found.bandwidth_gbs, source="command line")


# A copy of a checkout whose git metadata is not its own (a tree synced to a
# GPU machine beside an older .git) names its commit here.
COMMIT_VARIABLE = "MLX_SGEMM_SOURCE_COMMIT"


def source_commit() -> str:
    """The package checkout's commit (``-dirty`` when it has changes), or "" when
    it is not a git checkout (an installed wheel) or git is absent; the
    environment's MLX_SGEMM_SOURCE_COMMIT, where set, instead."""
    if os.environ.get(COMMIT_VARIABLE):
        return os.environ[COMMIT_VARIABLE]
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return ""
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=here, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("-dirty" if dirty else "")


def as_numpy(x: mx.array) -> np.ndarray:
    """``x`` as a float32 numpy array: exact for float16 and bfloat16, which
    numpy cannot take from MLX as they are (it has no bfloat16)."""
    return np.array(x.astype(mx.float32))


class SampledReference:
    """The error of results of ``a @ b`` on ERROR_SAMPLE_ROWS sampled rows,
    the float64 reference worked out once for every kernel on the operands."""

    def __init__(self, a: mx.array, b: mx.array, seed: int = 0):
        m = a.shape[0]
        rows = np.sort(np.random.default_rng(seed).choice(m, min(m, ERROR_SAMPLE_ROWS), replace=False))
        self.idx = mx.array(rows)
        self.reference = accuracy.Reference(as_numpy(a[self.idx]), as_numpy(b))

    def error(self, c: mx.array) -> float:
        return self.reference.error(as_numpy(c[self.idx]))


def sampled_error(c: mx.array, a: mx.array, b: mx.array, seed: int = 0) -> float:
    return SampledReference(a, b, seed).error(c)


def kernel_function(kernel: str, precision: str):
    return mx.matmul if kernel == BASELINE else ops.op_by_name(kernel, precision)


# Each shape's kernels and its mx.matmul are timed in alternating rounds, each
# kernel's time its median round: a drift of the GPU's clock (it runs at its
# power limit on big products) or of the host then lands on both sides of a
# ratio, not on whichever ran later.
ROUNDS = 3


def side_by_side(kernels: list[str], precision: str, a: mx.array, b: mx.array, repeats: int,
                 error: bool, calls: str = timing.ONE_AT_A_TIME,
                 per_evaluation: int | None = None) -> dict[str, tuple[float, float | None, float]]:
    """(seconds, error, spread) of mx.matmul and of each of ``kernels`` at
    ``precision`` on ``a @ b``, timed in alternating rounds in this process,
    the way ``calls`` says (bench.timing.call_seconds)."""
    fns = {BASELINE: mx.matmul, **{k: kernel_function(k, precision) for k in kernels}}
    rounds = timing.alternating_rounds(
        {name: (lambda fn=fn: fn(a, b)) for name, fn in fns.items()}, rounds=ROUNDS, repeats=repeats,
        calls=calls, per_evaluation=per_evaluation)
    reference = SampledReference(a, b) if error else None
    return {name: (statistics.median(rounds[name]), reference.error(fn(a, b)) if reference else None,
                   timing.spread(rounds[name]))
            for name, fn in fns.items()}


def operands(shape, dtype: str = "float32") -> tuple[mx.array, mx.array]:
    """Fresh random (M x K, K x N) operands of one (M, N, K), both of ``dtype``
    (accuracy.random_operands, rounded to it), evaluated."""
    m, n, k = shape
    a, b = (x.astype(getattr(mx, dtype)) for x in accuracy.random_operands((m, k), (k, n)))
    mx.eval(a, b)
    return a, b


def side_by_side_on(shape, kernels: list[str], precision: str, repeats: int, dtype: str = "float32",
                    calls: str = timing.ONE_AT_A_TIME, per_evaluation: int | None = None):
    """side_by_side on fresh random operands of one (M, N, K) and ``dtype``,
    the error measured up to ERROR_MAX_WORK; the operands are freed on return."""
    m, n, k = shape
    a, b = operands(shape, dtype)
    return side_by_side(kernels, precision, a, b, repeats, m * n * k <= ERROR_MAX_WORK, calls, per_evaluation)


def _side_by_side_shapes(shapes, kernels, precision, repeats, calls, per_evaluation):
    """side_by_side_on each (M, N, K) in ``shapes`` (float32 operands), as JSON-ready rows."""
    rows = []
    for shape in shapes:
        timed = side_by_side_on(shape, kernels, precision, repeats, "float32", calls, per_evaluation)
        rows.append([list(shape), {name: list(te) for name, te in timed.items()}])
    return rows


def in_tf32_process(function: str, *args):
    """``function(*args)`` (a name in this module's package, "module:function",
    its arguments and result JSON) in a child process with MLX_ENABLE_TF32=1:
    there mx.matmul is cuBLAS's TF32 (MLX reads the flag once per process)."""
    module, name = function.split(":")
    code = (
        "import importlib,json,sys; "
        f"fn = getattr(importlib.import_module('mlx_sgemm.bench.{module}'), '{name}'); "
        "print(json.dumps(fn(*json.loads(sys.argv[1]))))"
    )
    env = dict(os.environ, MLX_ENABLE_TF32="1")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)],
                         env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def tf32_side_by_side(shapes, kernels: list[str], repeats: int, calls: str = timing.ONE_AT_A_TIME,
                      per_evaluation: int | None = None) -> dict[tuple[int, int, int], dict]:
    """side_by_side at TF32 in a child process with MLX_ENABLE_TF32=1 (in_tf32_process)."""
    timed_rows = in_tf32_process("measure:_side_by_side_shapes", shapes, kernels, "tf32", repeats, calls,
                                 per_evaluation)
    return {tuple(s): {name: tuple(te) for name, te in timed.items()} for s, timed in timed_rows}


def measure(
    shapes: list[tuple[int, int, int]],
    kernels: list[str],
    precisions: list[str],
    repeats: int = 20,
    peak: peaks.DevicePeak | None = None,
    progress: bool = True,
    dtypes: list[str] = ("float32",),
    calls: str = timing.ONE_AT_A_TIME,
    per_evaluation: int | None = None,
) -> list[Measurement]:
    """Time ``kernels`` (and mx.matmul) on every (M, N, K) in ``shapes`` and
    operands of each of ``dtypes``: for float32 each precision's kernels side
    by side with mx.matmul at that precision; for a half dtype every kernel
    once, matmul at its default precision (the module's docstring says why).
    ``calls`` and ``per_evaluation``: how each product is timed
    (bench.timing.call_seconds)."""
    for dtype in dtypes:
        if dtype not in DTYPES:
            raise ValueError(f"dtypes must be among {DTYPES}, got {dtype!r}")
    backend = device.backend()
    peak = peak or device_peak()
    name, version = device.name(), mx.__version__
    date = datetime.date.today().isoformat()
    from .. import __version__ as ours  # the package's __init__ imports this module

    commit = source_commit()
    # Which precisions really differ: TF32 exists on CUDA only, and only the
    # adaptive matmul takes a precision.
    precisions = [p for p in precisions if p == "float32" or backend == device.CUDA]
    float32_kernels = [k for k in kernels if k != "matmul" or "float32" in precisions]
    tf32 = {}
    if "tf32" in precisions and "float32" in dtypes:
        tf32 = tf32_side_by_side([list(s) for s in shapes], [k for k in kernels if k == "matmul"], repeats,
                                 calls, per_evaluation)

    results = []

    def record(m, n, k, dtype, kernel, precision, seconds, err, spread, baseline):
        rate = timing.gflops(m, n, k, seconds)
        row = dict(backend=backend, kernel=kernel, precision=precision, device=name, M=m, N=n, K=k, dtype=dtype)
        results.append(Measurement(
            name, version, date, backend, kernel, precision, m, n, k, seconds, rate,
            peaks.pct_of_units_peak(row, rate, peak), baseline / seconds, err,
            peaks.units(row), spread, ours, commit, dtype, calls,
        ))

    for shape in _progress(shapes, progress):
        for dtype in dtypes:
            if dtype == "float32":
                timed_by_precision = {"float32": side_by_side_on(shape, float32_kernels, "float32", repeats,
                                                                 dtype, calls, per_evaluation)}
                if tuple(shape) in tf32:
                    timed_by_precision["tf32"] = tf32[tuple(shape)]
            else:
                timed_by_precision = {HALF_PRECISION: side_by_side_on(shape, list(kernels), HALF_PRECISION, repeats,
                                                                      dtype, calls, per_evaluation)}
            for precision, timed in timed_by_precision.items():
                base = timed[BASELINE][0]
                for kernel, (seconds, err, spread) in timed.items():
                    record(*shape, dtype, kernel, precision, seconds, err, spread, base)
    return results


def _progress(shapes, shown: bool):
    """The shapes, with a progress bar where ``shown`` and tqdm (the bench extra) is installed."""
    if shown:
        try:
            from tqdm import tqdm
        except ImportError:
            return shapes
        return tqdm(shapes, desc="bench", unit="shape")
    return shapes


def as_dicts(results: list[Measurement]) -> list[dict]:
    return [asdict(r) for r in results]
