"""The newest recorded benchmark sweep (``benchmarks/results/bench-*.csv``,
what ``mlx-sgemm bench`` shows without a GPU) and the figures pages quote from
it, formatted one way everywhere."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from ..bench import results
from ..bench.measure import BASELINE


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
    rows: tuple[dict, ...]

    @property
    def first(self) -> dict:
        return self.rows[0]

    def sizes(self) -> list[int]:
        """The square sizes of the sweep, smallest first."""
        return sorted({r["M"] for r in self.rows if r["M"] == r["N"] == r["K"]})

    def largest(self, count: int = 2) -> list[int]:
        return self.sizes()[-count:]

    def row(self, kernel: str, precision: str, size: int) -> dict:
        (found,) = [r for r in self.rows if r["kernel"] == kernel and r["precision"] == precision
                    and r["M"] == r["N"] == r["K"] == size]
        return found

    def kernels(self, precision: str) -> list[str]:
        """The kernels timed at ``precision``, in the sweep's order, mx.matmul first."""
        found = list(dict.fromkeys(r["kernel"] for r in self.rows if r["precision"] == precision))
        return sorted(found, key=lambda k: k != BASELINE)

    def both(self, kernel: str, precision: str, field: str, fmt, sizes=None) -> str:
        """A field at the largest two sizes, "a / b"."""
        return " / ".join(fmt(self.row(kernel, precision, n)[field]) for n in sizes or self.largest())

    def sizes_text(self) -> str:
        return " / ".join(shape_text(n, n, n) for n in self.largest())

    def source(self) -> str:
        """Which run: device, MLX, date, commit and file, for a caption."""
        r = self.first
        commit = f", commit `{r['commit']}`" if r.get("commit") else ""
        return (f"{r['device']}, MLX {r['mlx_version']}, {r['date']}{commit} "
                f"(`benchmarks/results/{self.path.name}`)")


@functools.cache
def newest() -> Sweep:
    path = results.newest_recorded()
    if path is None:
        raise FileNotFoundError("no recorded sweep (benchmarks/results/bench-*.csv)")
    return Sweep(path, tuple(results.read_csv(path)))
