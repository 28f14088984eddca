"""The error of each precision mode against float64, on normal and on
wide-range inputs: measured on a GPU, or read from recorded runs.

The modes:

* **float32** (the default): ``mlx_sgemm.matmul(a, b)``, and ``mx.matmul`` with
  ``MLX_ENABLE_TF32=0`` (cuBLAS SGEMM on CUDA);
* **tf32**: ``mlx_sgemm.matmul(a, b, precision="tf32")``, chosen per call, and
  ``mx.matmul`` with ``MLX_ENABLE_TF32=1``, MLX's switch for a whole process
  (so measured in a child process, :func:`measure.in_tf32_process`); CUDA only;
* **per op**: each stage op (naive ... tile_async) computes in its own fixed
  arithmetic, FP32 FMAs or 3xTF32, whatever is asked.

The inputs: ``normal`` (:func:`accuracy.random_operands`, what the benchmark's
error column is measured on) and ``wide-range`` (GEMMul8's test matrices,
:func:`accuracy.wide_range_operands`). The error is the benchmark's
(:mod:`mlx_sgemm.bench.accuracy`) on the same 256 sampled rows of C for every
kernel. ``benchmarks/precision_modes.py`` records a run as
``benchmarks/results/precision-modes-<date>-<device>.csv``; without a GPU the
notebook reads the newest of those, and the sweep's error column (normal
inputs) where there is none.
"""

from __future__ import annotations

import csv
import datetime
import os
from pathlib import Path

import mlx.core as mx
import numpy as np

from ..dispatch import device
from . import accuracy, measure, results

INPUTS = ("normal", "wide-range")
COLUMNS = ("device", "mlx_version", "date", "backend", "inputs", "kernel", "precision", "M", "N", "K", "error")
_NUMERIC = {"M": int, "N": int, "K": int, "error": float}
RECORDED_GLOB = "precision-modes-*.csv"


def operands(inputs: str, m: int, n: int, k: int, seed: int = 0):
    """The (M x K, K x N) float32 operands of one kind of ``inputs``."""
    if inputs == "normal":
        return accuracy.random_operands((m, k), (k, n), seed)
    if inputs == "wide-range":
        return accuracy.wide_range_operands((m, k), (k, n), seed=seed)
    raise ValueError(f"inputs must be one of {INPUTS}, got {inputs!r}")


def errors(precision: str, sizes, inputs=INPUTS, kernels=measure.KERNELS) -> list[dict]:
    """Rows of the error of mx.matmul and of ``kernels`` at ``precision`` (only
    matmul takes one: at "tf32" the stage ops are left out) on square ``sizes``
    of each kind of ``inputs``, in this process: mx.matmul is at whatever
    precision this process's MLX_ENABLE_TF32 gives it."""
    if precision == "tf32":
        kernels = [k for k in kernels if k == "matmul"]
    common = {"device": device.name(), "mlx_version": mx.__version__, "date": datetime.date.today().isoformat(),
              "backend": device.backend(), "precision": precision}
    rows = []
    for kind in inputs:
        for size in sizes:
            a, b = operands(kind, size, size, size)
            sample = np.sort(np.random.default_rng(0).choice(size, min(size, measure.ERROR_SAMPLE_ROWS),
                                                             replace=False))
            idx = mx.array(sample)
            exact = accuracy.Reference(np.array(a[idx]), np.array(b))
            for name in (measure.BASELINE, *kernels):
                c = measure.kernel_function(name, precision)(a, b)
                rows.append({**common, "inputs": kind, "kernel": name, "M": size, "N": size, "K": size,
                             "error": exact.error(np.array(c[idx]))})
    return rows


def measure_modes(sizes, inputs=INPUTS, kernels=measure.KERNELS) -> list[dict]:
    """Every mode's errors on this machine's GPU: float32 in this process (which
    must have MLX_ENABLE_TF32=0 on CUDA, as the benchmark sets it), TF32 on CUDA
    in a child process with MLX_ENABLE_TF32=1 (elsewhere there is no TF32)."""
    backend = device.backend()
    if backend not in (device.CUDA, device.METAL):
        raise RuntimeError(f"measuring the kernels' errors needs an MLX GPU backend; this machine's is {backend}")
    if backend == device.CUDA and os.environ.get("MLX_ENABLE_TF32") != "0":
        raise RuntimeError("set MLX_ENABLE_TF32=0 before MLX's first product: mx.matmul is then cuBLAS "
                           "SGEMM, the float32 mode's baseline")
    rows = errors("float32", list(sizes), list(inputs), list(kernels))
    if backend == device.CUDA:
        rows += measure.in_tf32_process("precision_modes:errors", "tf32", list(sizes), list(inputs), list(kernels))
    return rows


def from_sweep(rows: list[dict]) -> list[dict]:
    """The error column of a benchmark run's rows (normal inputs), as rows of this module."""
    return [{**{c: row[c] for c in COLUMNS if c in row}, "inputs": "normal"}
            for row in rows if row["error"] is not None]


def write_csv(rows: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames} != {list(COLUMNS)}")
        return [{k: _NUMERIC[k](v) if k in _NUMERIC else v for k, v in row.items()} for row in reader]


def newest_recorded() -> Path | None:
    """The most recent recorded precision-modes run, or None."""
    return results.newest_recorded(pattern=RECORDED_GLOB)
