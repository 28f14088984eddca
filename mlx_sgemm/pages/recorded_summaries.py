"""Summaries of the recorded runs other than the sweep, for
docs/current-figures.md: the newest shape suite and crossover run of each GPU."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from ..bench import results
from ..bench.measure import DTYPES
from .sweep_figures import ratio, shape_text

GOOD_ENOUGH = 0.8  # the shape suite's line: a product at this ratio or above is counted


def read_rows(path: Path) -> list[dict]:
    """A recorded run's rows as the CSV has them (strings)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def suite_shape(row: dict) -> str:
    """A shape-suite row's product in words: M x N x K, `x @ W.T` where B is a
    transposed view, its batch."""
    return shape_text(*(int(row[d]) for d in "MNK")) + (
        " `x @ W.T`" if row.get("b_transposed_view") == "True" else "") + (
        f", batch {row['batch']}" if row.get("batch") else "")


def newest_by_device(pattern: str, key=lambda row: row["device"]) -> dict:
    """{key of its rows: the newest run matching ``pattern``} (``key`` is the device by default)."""
    found = {}
    for path in results.recorded_runs(pattern):  # newest first
        for k in dict.fromkeys(key(r) for r in read_rows(path)):
            found.setdefault(k, path)
    return found


def _suite_key(row: dict) -> tuple[str, str, int, str, str]:
    """(GPU, way of calling, operand dtype in DTYPES' order, its name,
    precision) of a shape-suite row; float32 for suites recorded before the
    dtype column."""
    dtype = results.dtype_of(row)
    return row["device"], results.calls_of(row), DTYPES.index(dtype), dtype, row["precision"]


def shape_suites() -> str:
    """Per GPU, way of calling, operand dtype and precision, the newest shape
    suite (a suite may hold one precision): how many shapes at or above 0.8x
    mx.matmul, the median ratio and the lowest."""
    lines = ["| GPU | calls | dtype | precision | shapes >= 0.8x | median | lowest | run |",
             "|---|---|---|---|---:|---:|---|---|"]
    runs = newest_by_device("shapes-*.csv", key=_suite_key)
    for key, path in sorted(runs.items()):
        device, calls, _, dtype, precision = key
        mine = [r for r in read_rows(path) if _suite_key(r) == key]
        ratios = [float(r["ratio"]) for r in mine]
        low = min(mine, key=lambda r: float(r["ratio"]))
        where = suite_shape(low)
        lines.append(f"| {device} | {calls} | {dtype} | {precision} | {sum(x >= GOOD_ENOUGH for x in ratios)}/{len(ratios)} "
                     f"| {ratio(statistics.median(ratios))} | {ratio(float(low['ratio']))} at {where} | "
                     f"`{path.name}` |")
    return "\n".join(lines)


def crossovers(pattern: str, ratio_column: str) -> str:
    """Per GPU, the newest crossover run: each kernel's ratio to cuBLAS, a row per shape."""
    out = []
    for device, path in sorted(newest_by_device(pattern).items()):
        rows = [r for r in read_rows(path) if r["device"] == device]
        kernels = [k for k in dict.fromkeys(r["kernel"] for r in rows) if k != "mx.matmul"]
        shapes = list(dict.fromkeys((int(r["M"]), int(r["N"]), int(r["K"])) for r in rows))
        out.append(f"{device} (`benchmarks/results/{path.name}`), x cuBLAS:\n")
        out.append("| M x N x K | " + " | ".join(f"`{k}`" for k in kernels) + " |")
        out.append("|---|" + "---:|" * len(kernels))
        for shape in shapes:
            cells = []
            for kernel in kernels:
                found = [r for r in rows if r["kernel"] == kernel and (int(r["M"]), int(r["N"]), int(r["K"])) == shape]
                cells.append(ratio(float(found[0][ratio_column])) if found else "-")
            out.append(f"| {shape_text(*shape)} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)
