"""Tables of the newest recorded sweep (:mod:`.sweep_figures`): the README's
headline and results (float32 operands), and every size and operand dtype for
docs/current-figures.md; all of one way of calling, which the captions name."""

from __future__ import annotations

from ..bench import peaks
from ..bench.measure import BASELINE
from .sweep_figures import error, newest, ratio, shape_text, tflops

# What each kernel is, in the results table.
WHAT = {
    BASELINE: "cuBLAS SGEMM (`MLX_ENABLE_TF32=0`)",
    "naive": "one thread per output",
    "tile_16": "shared-memory tiles, 16x16",
    "tile_32": "shared-memory tiles, 32x32",
    "tile_threads": "register tiles",
    "tile_simdgroup": "tensor cores (`mma.sync`), 3xTF32",
    "tile_async": "the same, fed by asynchronous copies",
    "matmul": "the adaptive op",
}


def headline() -> str:
    """``matmul`` against cuBLAS at the sweep's two largest sizes, in each precision."""
    s = newest()
    lines = [f"| {s.sizes_text()} | TFLOP/s | x cuBLAS | error | cuBLAS's error |", "|---|---:|---:|---:|---:|"]
    for label, precision in (("`matmul(a, b)` (float32-accurate) vs cuBLAS SGEMM", "float32"),
                             ('`matmul(a, b, precision="tf32")` vs cuBLAS TF32', "tf32")):
        lines.append(f"| {label} | {s.both('matmul', precision, 'gflops', tflops)} | "
                     f"{s.both('matmul', precision, 'x_matmul', ratio)} | "
                     f"{s.both('matmul', precision, 'error', error)} | "
                     f"{s.both(BASELINE, precision, 'error', error)} |")
    lines.append(f"\n{s.source()}.")
    return "\n".join(lines)


def results_table() -> str:
    """Every kernel at the sweep's two largest sizes: TFLOP/s, ratio, % of its units' peak, error."""
    s = newest()
    lines = [f"| kernel | what it is | units | TFLOP/s {s.sizes_text()} | x `mx.matmul` | % of the units' peak | error |",
             "|---|---|---|---:|---:|---:|---:|"]
    for precision in ("float32", "tf32"):
        for kernel in s.kernels(precision):
            first = s.row(kernel, precision, s.largest()[0])
            name = f"`{kernel}`" + ("" if precision == "float32" else " (TF32)")
            what = WHAT[kernel] if precision == "float32" else (
                "cuBLAS TF32 (MLX's default)" if kernel == BASELINE else "the adaptive op, TF32")
            pct = s.both(kernel, precision, "pct_peak", lambda x: "-" if x is None else f"{x:.0f}%")
            lines.append(f"| {name} | {what} | {peaks.row_units(first)} | "
                         f"{s.both(kernel, precision, 'gflops', tflops)} | "
                         f"{s.both(kernel, precision, 'x_matmul', ratio)} | {pct} | "
                         f"{s.both(kernel, precision, 'error', error)} |")
    lines.append(f"\n{s.source()}. Each time is the median of 20 runs after warm-up, in 3 rounds "
                 "alternating with `mx.matmul` in one process; error is ||C - C64||_F / || |A| |B| ||_F "
                 "against float64 on 256 sampled rows.")
    return "\n".join(lines)


def every_size(dtypes=None) -> str:
    """Every kernel at every size of the sweep, on each of ``dtypes`` it has
    (None: all): TFLOP/s and the ratio to mx.matmul."""
    s = newest()
    sizes = s.sizes()
    lines = ["| kernel | " + " | ".join(shape_text(n, n, n) for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for dtype in [d for d in s.dtypes() if dtypes is None or d in dtypes]:
        squares = {(r["kernel"], r["precision"], r["M"]): r for r in s.shown(dtype) if r["M"] == r["N"] == r["K"]}
        for precision in s.precisions(dtype):
            for kernel in s.kernels(precision, dtype):
                shown = [x for x in (dtype, precision) if x != "float32"]
                name = f"`{kernel}`" + (f" ({', '.join(shown)})" if shown else "")
                cells = []
                for n in sizes:
                    r = squares.get((kernel, precision, n))
                    cells.append("-" if r is None else tflops(r["gflops"]) + (
                        "" if kernel == BASELINE else f" ({ratio(r['x_matmul'])})"))
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(f"\nTFLOP/s (x `mx.matmul` at the same precision, on the same operands). {s.source()}.")
    return "\n".join(lines)
