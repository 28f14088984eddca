"""The newest recorded benchmark sweep (``benchmarks/results/bench-*.csv``,
what ``mlx-sgemm bench`` shows without a GPU) and the figures pages quote from
it, formatted one way everywhere. A sweep may hold products timed both ways
(``calls``): its figures are of one way, one at a time where it has it
(``results.headline_calls``), and each caption says which."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..bench import results, timing
from ..bench.measure import BASELINE, DTYPES


def shape_text(m: int, n: int, k: int) -> str:
    """4096^3 for a cube, else 1x4096x4096 (M x N x K)."""
    return f"{m}^3" if m == n == k else f"{m}x{n}x{k}"


def tflops(gflops: float) -> str:
    return f"{gflops / 1000:.1f}"


def ratio(x: float) -> str:
    return f"{x:.2f}x"


def error(x: float | None) -> str:
    return "-" if x is None else f"{x:.1e}"


@dataclass(frozen=True)
class Sweep:
    path: Path
    rows: tuple[dict, ...]  # every row of the file, of either way of calling

    @property
    def first(self) -> dict:
        return self.shown()[0]

    @property
    def calls(self) -> str:
        """The way of calling its figures are of."""
        return results.headline_calls(self.rows)

    def shown(self, dtype: str | None = None) -> list[dict]:
        """The rows timed the way :attr:`calls` says, of ``dtype`` (None: any)."""
        return [r for r in self.rows if r["calls"] == self.calls and dtype in (None, r["dtype"])]

    def dtypes(self) -> list[str]:
        """The operand dtypes of the rows shown, float32 first."""
        found = {r["dtype"] for r in self.shown()}
        return [d for d in DTYPES if d in found]

    def sizes(self) -> list[int]:
        """The square sizes of the sweep (float32 operands), smallest first."""
        return sorted({r["M"] for r in self.shown("float32") if r["M"] == r["N"] == r["K"]})

    def largest(self, count: int = 2) -> list[int]:
        return self.sizes()[-count:]

    def row(self, kernel: str, precision: str, size: int, dtype: str = "float32") -> dict:
        (found,) = [r for r in self.shown(dtype) if r["kernel"] == kernel and r["precision"] == precision
                    and r["M"] == r["N"] == r["K"] == size]
        return found

    def precisions(self, dtype: str = "float32") -> list[str]:
        """The precisions timed on ``dtype`` operands, float32 first."""
        return sorted({r["precision"] for r in self.shown(dtype)}, key=lambda p: p != "float32")

    def kernels(self, precision: str, dtype: str = "float32") -> list[str]:
        """The kernels timed at ``precision`` on ``dtype`` operands, in the sweep's order, mx.matmul first."""
        found = list(dict.fromkeys(r["kernel"] for r in self.shown(dtype) if r["precision"] == precision))
        return sorted(found, key=lambda k: k != BASELINE)

    def both(self, kernel: str, precision: str, field: str, fmt, sizes=None, dtype: str = "float32") -> str:
        """A field at the largest two sizes, "a / b"."""
        return " / ".join(fmt(self.row(kernel, precision, n, dtype)[field]) for n in sizes or self.largest())

    def sizes_text(self) -> str:
        return " / ".join(shape_text(n, n, n) for n in self.largest())

    def source(self) -> str:
        """Which run and how it was timed: device, MLX, date, commit, file and
        way of calling, for a caption."""
        r = self.first
        commit = f", commit `{r['commit']}`" if r.get("commit") else ""
        return (f"{r['device']}, MLX {r['mlx_version']}, {r['date']}{commit} "
                f"(`benchmarks/results/{self.path.name}`), timed {timing.TIMED[self.calls]}")


@functools.cache
def newest() -> Sweep:
    path = results.newest_recorded()
    if path is None:
        raise FileNotFoundError("no recorded sweep (benchmarks/results/bench-*.csv)")
    return Sweep(path, tuple(results.read_csv(path)))
