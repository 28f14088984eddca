"""Chapter 8's figures, from the recorded runs: the newest shape suites' half
operands, one at a time and as independent calls, against the issue's
targets (benchmarks/shape_suite.py --dtype), the bytes of W the few-row
products read per second
(benchmarks/half_precision.py, ``half-precision-*.csv``), and half_gemv alone
against MLX's GEMV (benchmarks/ncu_small_m.py, ``half-gemv-kernel-*.csv``), and
the GPU time of the larger products' kernels against cuBLAS's
(benchmarks/half_kernel_times.py, ``half-kernel-times-*.csv``)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from ..bench import results, timing
from .recorded_summaries import newest_by_device, read_rows, suite_shape
from .sweep_figures import ratio, shape_text

HALF_DTYPES = ("bfloat16", "float16")
# The targets, by rows of C: products of a few rows (bound by reading W) at
# least level with mx.matmul, products of 128 rows and more at least 0.9x.
FEW_ROWS, MANY_ROWS = 8, 128
TARGETS = {"M <= 8": 1.0, "M >= 128": 0.9}
NONE_YET = "No shape suite with half operands is recorded yet (`benchmarks/shape_suite.py --dtype bfloat16 float16`)."


def _newest_half_suites() -> dict[str, tuple[Path, list[dict]]]:
    """{way of calling: (path, half rows)} of the newest suite with half
    operands timed that way, one at a time first."""
    found: dict[str, tuple[Path, list[dict]]] = {}
    for path in results.recorded_runs("shapes-*.csv"):  # newest first
        half = [r for r in read_rows(path) if results.dtype_of(r) in HALF_DTYPES]
        for calls in dict.fromkeys(results.calls_of(r) for r in half):
            found.setdefault(calls, (path, [r for r in half if results.calls_of(r) == calls]))
    return {calls: found[calls] for calls in timing.CALLS if calls in found}


def suite_table() -> str:
    """Per way of calling (one at a time, then independent calls), per half
    dtype and class of rows, the newest suite's shapes at or above the target,
    the median and lowest ratio to mx.matmul."""
    suites = _newest_half_suites()
    if not suites:
        return NONE_YET
    tables = []
    for calls, (path, rows) in suites.items():
        lines = [f"{rows[0]['device']}, {calls}, `{path.name}` (ratio: mx.matmul's time over ours, the same dtype):",
                 "", "| dtype | rows of C | target | shapes at or above it | median | lowest |",
                 "|---|---|---:|---:|---:|---|"]
        for dtype in HALF_DTYPES:
            for label, target in TARGETS.items():
                mine = [r for r in rows if results.dtype_of(r) == dtype
                        and (int(r["M"]) <= FEW_ROWS if label == "M <= 8" else int(r["M"]) >= MANY_ROWS)]
                if not mine:
                    continue
                ratios = [float(r["ratio"]) for r in mine]
                low = min(mine, key=lambda r: float(r["ratio"]))
                met = sum(x >= target for x in ratios)
                lines.append(f"| {dtype} | {label} | {ratio(target)} | {met}/{len(ratios)} | "
                             f"{ratio(statistics.median(ratios))} | {ratio(float(low['ratio']))} at {suite_shape(low)} |")
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def weight_bandwidth() -> str:
    """A token's products' bytes of W read per second (M = 1, ``x @ W.T``),
    ours and mx.matmul's, from the newest half-precision run (8 products by
    distinct weights evaluated together)."""
    runs = results.recorded_runs("half-precision-*.csv")
    if not runs:
        return "No half-precision run is recorded yet (`benchmarks/half_precision.py`)."
    rows = [r for r in read_rows(runs[0])
            if r["w_gbs"] and r["chosen"] == "True" and r["layout"] == "transposed" and r["M"] == "1"]
    lines = [f"{rows[0]['device'] if rows else ''}, `x @ W.T`, `{runs[0].name}`:", "",
             "| dtype | M x N x K | kernel | W read by ours | by mx.matmul |", "|---|---|---|---:|---:|"]
    for r in rows:
        share = float(r["w_pct_bandwidth"])
        lines.append(f"| {r['dtype']} | {shape_text(int(r['M']), int(r['N']), int(r['K']))} | `{r['kernel']}` "
                     f"| {float(r['w_gbs']):,.0f} GB/s ({share:.0f}% of the GPU's) | {float(r['mx_w_gbs']):,.0f} GB/s |")
    return "\n".join(lines)


def gemv_kernel_table() -> str:
    """half_gemv's kernels alone (Nsight Compute, L2 flushed, median of 5
    calls), the newest run of each GPU: the instance matmul chooses for each
    recorded shape, its time and share of the memory's bandwidth, a model
    layer's kernel for a token alone (half_gemv_one_row) where it was timed,
    beside MLX's GEMV where it was timed."""
    runs = newest_by_device("half-gemv-kernel-*.csv")  # newest first
    if not runs:
        return "No run of half_gemv alone is recorded yet (`benchmarks/ncu_small_m.py`)."
    return "\n\n".join(_gemv_kernel_run(path, read_rows(path)) for path in runs.values())


def _gemv_kernel_run(path: Path, rows: list[dict]) -> str:
    from ..dispatch import kernel_choice
    from ..dispatch.problem import plan

    dtype = rows[0]["dtype"]
    lines = [f"{rows[0]['device']}, {dtype}, the kernel alone, `{path.name}`:", "",
             "| M x N x K | B | half_gemv (as matmul runs it) | DRAM | half_gemv_one_row (a layer's token) | DRAM "
             "| MLX's GEMV | DRAM |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    shapes = dict.fromkeys((int(r["M"]), int(r["N"]), int(r["K"]), r["layout"]) for r in rows)

    def timed(of_shape, kernel, spec):  # the shape's rows of `kernel` in `spec`'s template
        chosen = gemv_template(spec)
        return [r for r in of_shape if r["kernel"] == kernel
                and all(str(r.get(name) or "") == str(value) for name, value in chosen.items() if name in TEMPLATE)]

    def cells(found):
        return f"{float(found[0]['median_us']):.1f} us | {float(found[0]['dram_pct']):.0f}%"

    for m, n, k, layout in shapes:
        of_shape = [r for r in rows if (int(r["M"]), int(r["N"]), int(r["K"]), r["layout"]) == (m, n, k, layout)]
        ours = timed(of_shape, "half_gemv", kernel_choice.half_gemv(plan((m, k), (k, n)), dtype, dtype))
        layer = timed(of_shape, "half_gemv_one_row", kernel_choice.half_gemv_one_row(dtype, dtype))
        mlx = [r for r in of_shape if r["kernel"].startswith("mx.matmul")]
        if not ours and not mlx:
            continue
        # A run recorded before matmul's current instance for the shape says so.
        mine = cells(ours) if ours else "not timed in its current blocks | -"
        layers = cells(layer) if layer else "- | -"
        theirs = cells(mlx) if mlx else "- | -"
        lines.append(f"| {shape_text(m, n, k)} | {'`x @ W.T`' if layout == 'transposed' else 'row-major'} "
                     f"| {mine} | {layers} | {theirs} |")
    return "\n".join(lines)


# The template constants a half_gemv-kernel-*.csv records (benchmarks/ncu_half_gemv.py).
TEMPLATE = ("NT", "WARPS", "IN_FLIGHT", "ONE_ROW", "UNROLL", "PARTS", "MIN_BLOCKS")


def gemv_template(spec) -> dict:
    """A half_gemv or half_gemv_one_row instance's template and its
    MIN_BLOCKS: what a half-gemv-kernel-*.csv row records of it (TEMPLATE)."""
    return {**dict(spec.template), "MIN_BLOCKS": spec.min_blocks}


# cuBLAS's Hopper kernels name their tile and cluster: nvjet_sm90_tst_128x128_64x6_2x1_...
_CUBLAS_TILE = re.compile(r"_(\d+x\d+)_\d+x\d+_(\d+)x(\d+)_")


def cublas_tile(names: str) -> str:
    """"128x128, clusters of 2" from a cuBLAS kernel's name (its tile and
    thread-block cluster), or "" where the name says neither."""
    found = _CUBLAS_TILE.search(names)
    if not found:
        return ""
    tile, cluster = found[1], int(found[2]) * int(found[3])
    return f"{tile}, clusters of {cluster}" if cluster > 1 else tile


def kernel_times_table() -> str:
    """The larger half products' kernels on the GPU (CUPTI, the median of 12
    evaluations, W never in L2), the newest run of each GPU: cuBLAS's (with
    its tile), matmul's choice and each half_wgmma block timed."""
    runs = newest_by_device("half-kernel-times-*.csv")  # newest first
    if not runs:
        return "No run of the half products' kernels is recorded yet (`benchmarks/half_kernel_times.py`)."
    return "\n\n".join(_kernel_times_run(path, [r for r in read_rows(path) if r.get("w_in_l2") != "True"])
                       for path in runs.values())


def _kernel_times_run(path: Path, rows: list[dict]) -> str:
    blocks = list(dict.fromkeys(r["kernel"] for r in rows if r["kernel"].startswith("wgmma:")))
    lines = [f"{rows[0]['device']}, {rows[0]['dtype']} `x @ W.T`, the GPU time of a product's kernels, "
             f"`{path.name}` (x cuBLAS: its time over ours):", "",
             "| M x N x K | cuBLAS (its tile) | `matmul` | " + " | ".join(
                 f"`half_wgmma` {b.removeprefix('wgmma:')}" for b in blocks) + " |",
             "|---|---:|---:|" + "---:|" * len(blocks)]
    for shape in dict.fromkeys((int(r["M"]), int(r["N"]), int(r["K"])) for r in rows):
        mine = {r["kernel"]: r for r in rows if (int(r["M"]), int(r["N"]), int(r["K"])) == shape}
        if "mx" not in mine or "ours" not in mine:
            continue
        mx_row = mine["mx"]
        tile = cublas_tile(mx_row["kernel_names"])
        lines.append(f"| {shape_text(*shape)} | {float(mx_row['median_us']):.1f} us{f' ({tile})' if tile else ''} "
                     f"| {_time_cell(mine.get('ours'))} | "
                     + " | ".join(_time_cell(mine.get(b)) for b in blocks) + " |")
    return "\n".join(lines)


def _time_cell(row: dict | None) -> str:
    return "-" if row is None else f"{float(row['median_us']):.1f} us ({ratio(float(row['x_mx']))})"
