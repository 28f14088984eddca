"""The side-by-side benchmark: every stage and ``mx.matmul`` on one problem size."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

import mlx.core as mx

from . import accuracy, device, ops, peaks, timing

# Rows of C checked against float64 at large sizes: the error estimate of a random
# sample of rows costs a sliver of the full float64 product.
ERROR_SAMPLE_ROWS = 256


@dataclass
class Row:
    kernel: str
    seconds: float
    gflops: float
    pct_peak: float | None
    x_matmul: float
    error: float


def device_name() -> str:
    try:
        return str(mx.device_info().get("device_name", "unknown GPU"))
    except Exception:  # noqa: BLE001 - older MLX builds have no device_info
        return "unknown GPU"


def baseline_label() -> str:
    """mx.matmul on CUDA uses TF32 unless MLX_ENABLE_TF32=0 (read once per process)."""
    if device.backend() == device.CUDA:
        tf32 = os.environ.get("MLX_ENABLE_TF32", "1") not in ("0", "false", "False")
        return "mx.matmul (TF32)" if tf32 else "mx.matmul (FP32)"
    return "mx.matmul"


def sampled_error(c: mx.array, a: mx.array, b: mx.array, seed: int = 0) -> float:
    rows = np.random.default_rng(seed).choice(a.shape[0], min(a.shape[0], ERROR_SAMPLE_ROWS), replace=False)
    rows = np.sort(rows)
    c_np, a_np = np.array(c)[rows], np.array(a)[rows]
    return accuracy.relative_error(c_np, a_np, np.array(b))


def run(size: int, kernels: list[str], repeats: int = 20) -> tuple[str, list[Row]]:
    """Time ``kernels`` and mx.matmul on size x size x size; returns (device, rows)."""
    a, b = accuracy.random_operands((size, size), (size, size))
    mx.eval(a, b)
    peak = peaks.fp32_peak_gflops(device_name())
    candidates = [(baseline_label(), mx.matmul)]
    candidates += [(name, ops.STAGE_OPS[name]) for name in kernels]
    timed = []
    for label, fn in candidates:
        seconds = timing.median_seconds(lambda: fn(a, b), repeats=repeats)
        timed.append((label, seconds, sampled_error(fn(a, b), a, b)))
    base_seconds = timed[0][1]
    rows = []
    for label, seconds, error in timed:
        rate = timing.gflops(size, size, size, seconds)
        rows.append(
            Row(label, seconds, rate, 100 * rate / peak if peak else None, base_seconds / seconds, error)
        )
    return device_name(), rows


def format_table(rows: list[Row]) -> str:
    lines = [
        "| kernel | GFLOP/s | % of FP32 peak | x mx.matmul | rel. error vs float64 |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        pct = f"{r.pct_peak:.1f}%" if r.pct_peak is not None else "peak unknown"
        lines.append(
            f"| `{r.kernel}` | {r.gflops:,.0f} | {pct} | {r.x_matmul:.2f} | {r.error:.2e} |"
        )
    return "\n".join(lines)
