"""The figures the notebook's prose quotes, from the newest recorded sweep
(what the notebook's recorded mode shows), and what ``matmul`` runs, in
``explain``'s words."""

from __future__ import annotations

from . import dispatch_table
from .sweep_figures import newest, ratio


def _percent(x: float) -> str:
    return f"{x:.0f}%"


def headline() -> str:
    s = newest()
    return (f"{s.both('matmul', 'float32', 'x_matmul', ratio)} as fast as cuBLAS SGEMM at {s.sizes_text()} "
            f"({s.first['device']}, float32-accurate)")


def tile_simdgroup() -> str:
    s = newest()
    above = " / ".join(_percent(100 * (s.row("tile_simdgroup", "float32", n)["gflops"]
                                       / s.row("tile_threads", "float32", n)["gflops"] - 1)) for n in s.largest())
    return (f"{s.both('tile_simdgroup', 'float32', 'gflops', lambda g: f'{g / 1000:.1f}')} TFLOP/s at "
            f"{s.sizes_text()} on the {s.first['device']}, {above} above `tile_threads`")


def pct_of_units(kernel: str):
    def span() -> str:
        s = newest()
        return f"{s.both(kernel, 'float32', 'pct_peak', _percent)} at {s.sizes_text()}"
    return span


def tile_async() -> str:
    s = newest()
    return f"{s.both('tile_async', 'float32', 'x_matmul', ratio)} at {s.sizes_text()} on the {s.first['device']}"


def matmul_ceiling() -> str:
    s = newest()
    r = s.row("matmul", "float32", s.largest()[-1])
    return (f"{s.both('matmul', 'float32', 'gflops', lambda g: f'{g / 1000:.1f}')} TFLOP/s at {s.sizes_text()} "
            f"on the {s.first['device']}, {s.both('matmul', 'float32', 'pct_peak', _percent)} of its "
            f"{r['peak_kind']} ceiling and {s.both('matmul', 'float32', 'x_matmul', ratio)} cuBLAS SGEMM")


def matmul_runs() -> str:
    """What matmul runs on Hopper and why, in explain's words."""
    return dispatch_table.rules()
