"""Chapter 7's phase table of the float16 split, from the newest recorded
``fp16-emulation-<date>-<device>.csv`` (benchmarks/fp16_emulation.py): each
call and phase's time by size, the whole calls against cuBLAS SGEMM, the
products against cuBLAS's FP16 GEMM on the same FLOPs."""

from __future__ import annotations

from ..bench import results
from .recorded_summaries import read_rows

NONE_YET = ("No run of the float16 split's phases is recorded yet (`benchmarks/fp16_emulation.py --csv "
            "benchmarks/results/fp16-emulation-<date>-<device>.csv`).")
# The rows' names in the file, and what the table calls them.
NAMES = {"mx.matmul": "cuBLAS SGEMM (`mx.matmul`, float32)", "matmul": "`matmul` (the launches replayed under "
         "`mx.compile`)", "fp16_emulated": "`fp16_emulated`, called directly"}


def _newest():
    """The newest timing run (not an accuracy run) and its rows, or None."""
    for path in results.recorded_runs("fp16-emulation-*.csv"):  # newest first
        if "accuracy" not in path.name:
            return path, read_rows(path)
    return None


def phase_table() -> str:
    """A row per call or phase, a column per size: microseconds, with the
    ratio to cuBLAS SGEMM for whole calls and the recorded note (the float16
    rate, the products against cuBLAS's FP16 GEMM) for the rest."""
    found = _newest()
    if found is None:
        return NONE_YET
    path, rows = found
    sizes = list(dict.fromkeys(int(r["M"]) for r in rows))
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    cell = {(r["kernel"], int(r["M"])): r for r in rows}
    lines = [f"{rows[0]['device']}, one process, calls evaluated many together "
             f"(`benchmarks/results/{path.name}`); x: cuBLAS SGEMM's time over the call's:", "",
             "| M = N = K | " + " | ".join(f"{s}" for s in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for kernel in kernels:
        cells = []
        for size in sizes:
            r = cell.get((kernel, size))
            if r is None:
                cells.append("-")
                continue
            text = f"{float(r['us']):,.0f} us"
            if kernel in ("matmul", "fp16_emulated"):
                text += f" ({float(r['x_cublas_sgemm']):.2f}x)"
            elif r["note"]:
                text += f": {r['note']}"
            cells.append(text)
        lines.append(f"| {NAMES.get(kernel, kernel)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
