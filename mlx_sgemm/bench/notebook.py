"""What ``notebooks/benchmark.ipynb``'s cells call: the mode (live on a GPU,
the recorded run without one), each chapter's figure, table and ceiling, and
the accuracy section's errors. The cells stay a few lines each; what they
show is worked out here, where the tests reach it.

The mode: with an MLX GPU backend (Metal or CUDA) the notebook measures live,
sizes :data:`LIVE_SIZES` (``MLX_SGEMM_NOTEBOOK_SIZES="256,1024"`` picks
others); without one, or with ``MLX_SGEMM_NOTEBOOK_RECORDED=1``, it shows the
newest run recorded on a real GPU (``benchmarks/results/``), as
``mlx-sgemm bench`` does. ``scripts/build_notebook.py`` sets the latter, so the
committed outputs are the recorded run's whatever machine builds them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from ..dispatch import device
from . import emulation_results, peaks, plots, precision_modes, sweep, tables, timing
from .measure import BASELINE

RECORDED_ENV = "MLX_SGEMM_NOTEBOOK_RECORDED"
SIZES_ENV = "MLX_SGEMM_NOTEBOOK_SIZES"
# Smaller than the command line's sweep, to stay quick (mlx-sgemm bench runs 256 ... 8192).
LIVE_SIZES = (256, 1024, 4096)
# Device memory feeding a kernel that reuses nothing: 2 floats (8 bytes) read
# per multiply-add (2 FLOP), 0.25 FLOP a byte (the M1 Pro matmul tutorial's count).
NO_REUSE_FLOP_PER_BYTE = 2 / 8


@dataclass(frozen=True)
class Chapter:
    kernels: tuple[str, ...]  # the ops the chapter is about
    earlier: tuple[str, ...] = ()  # the previous chapter's, drawn faintly
    memory_ceiling: bool = False  # draw device memory's no-reuse rate too


CHAPTERS = {
    "naive": Chapter(("naive",), memory_ceiling=True),
    "tile": Chapter(("tile_16", "tile_32"), ("naive",)),
    "tile_threads": Chapter(("tile_threads",), ("tile_16", "tile_32")),
    "tile_simdgroup": Chapter(("tile_simdgroup",), ("tile_threads",)),
    "tile_async": Chapter(("tile_async",), ("tile_simdgroup",)),
    "matmul": Chapter(("matmul",), ("tile_async",)),
}


def mode() -> str:
    """"live" where MLX has a GPU backend (and the recorded run is not asked for), else "recorded"."""
    if os.environ.get(RECORDED_ENV, "") not in ("", "0") or device.backend() == device.CPU_FALLBACK:
        return "recorded"
    return "live"


def live_sizes() -> tuple[int, ...]:
    text = os.environ.get(SIZES_ENV, "")
    if not text:
        return LIVE_SIZES
    sizes = tuple(int(s) for s in text.replace(",", " ").split())
    if not sizes or min(sizes) < 1:
        raise ValueError(f"{SIZES_ENV} must list sizes >= 1, got {text!r}")
    return sizes


def collect(out: Path) -> sweep.Run:
    """The run the notebook shows: measured now (live) or the recorded one, all its sizes."""
    recorded = mode() == "recorded"
    return sweep.collect(sizes=None if recorded else live_sizes(), out=out, force_recorded=recorded,
                         progress=False)


def mode_text(run: sweep.Run) -> str:
    """Markdown: which mode ran, on which backend, and where the figures come from."""
    backend = device.backend()
    if run.recorded:
        first = run.rows[0]
        why = ("no GPU here: MLX runs on its CPU backend, where the kernels cannot run"
               if backend == device.CPU_FALLBACK else f"{RECORDED_ENV}=1 asked for it (MLX backend here: {backend})")
        return (f"**Mode: recorded** ({why}).\n\nEvery speed below is read from `{run.source.name}`, measured on "
                f"**{first['device']}** with MLX {first['mlx_version']} on {first['date']}, {_calls(first)}. On a "
                f"machine with an MLX GPU backend this notebook measures live instead (sizes "
                f"{', '.join(map(str, live_sizes()))}).")
    first = run.rows[0]
    return (f"**Mode: live**, measured now on **{first['device']}** (MLX {first['mlx_version']}, backend "
            f"{backend}), {_calls(first)}. Written to `{run.csv}`. Set {RECORDED_ENV}=1 to show the recorded run "
            "instead.")


def _calls(row: dict) -> str:
    """How the run's products were timed, in words."""
    return f"timed {timing.TIMED[row['calls']]}"


def _peak(run: sweep.Run) -> peaks.DevicePeak:
    found = peaks.lookup(run.rows[0]["device"])
    return replace(found, fp32_gflops=run.peak_gflops, bandwidth_gbs=run.bandwidth_gbs)


def _rows(run: sweep.Run, kernels) -> list[dict]:
    return [r for r in run.rows if r["kernel"] in kernels and r["M"] == r["N"] == r["K"]]


def ceilings(run: sweep.Run, chapter: Chapter) -> list[tuple[str, float]]:
    """(label, GFLOP/s): the peak of each kind of unit the chapter's kernels
    run on (:mod:`mlx_sgemm.bench.peaks`), and for a kernel that reuses
    nothing the rate device memory can feed it. Unknown peaks are left out."""
    peak = _peak(run)
    found = {}
    for row in _rows(run, chapter.kernels):
        rate = peaks.units_peak(row, peak)
        if rate:
            found.setdefault(f"{row['peak_kind'] or peaks.units(row)} peak", rate)
    lines = list(found.items())
    if chapter.memory_ceiling and peak.bandwidth_gbs:
        lines.append(("device memory, no reuse", peak.bandwidth_gbs * NO_REUSE_FLOP_PER_BYTE))
    return lines


def _tflops(gflops) -> str:
    return f"{gflops / 1000:.1f}" if gflops is not None else "-"


def table(run: sweep.Run, chapter: Chapter) -> str:
    """Markdown: per square size, mx.matmul's TFLOP/s and each of the
    chapter's kernels' TFLOP/s, ratio to mx.matmul and % of its units' peak."""
    mine = _rows(run, chapter.kernels)
    labels = list(dict.fromkeys(tables.label(r) for r in mine))
    precisions = list(dict.fromkeys(r["precision"] for r in mine))
    baselines = [r for r in _rows(run, (BASELINE,)) if r["precision"] in precisions]
    base_labels = list(dict.fromkeys(tables.label(r) for r in baselines))
    cell = {(tables.label(r), r["M"]): r for r in mine + baselines}
    head = ["M = N = K", *(f"`{b}` TFLOP/s" for b in base_labels)]
    for name in labels:
        head += [f"`{name}` TFLOP/s", "x mx.matmul", "% of its units' peak"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for n in sorted({r["M"] for r in mine}):
        values = [str(n), *(_tflops(cell[(b, n)]["gflops"]) if (b, n) in cell else "-" for b in base_labels)]
        for name in labels:
            row = cell.get((name, n))
            if row is None:
                values += ["-"] * 3
                continue
            pct = f"{row['pct_peak']:.0f}% {row['peak_kind'] or ''}".strip() if row["pct_peak"] is not None else "unknown"
            values += [_tflops(row["gflops"]), f"{row['x_matmul']:.2f}x" if row["x_matmul"] else "-", pct]
        lines.append("| " + " | ".join(values) + " |")
    return "\n".join(lines)


def ceiling_text(run: sweep.Run, chapter: Chapter) -> str:
    """Markdown: where the chapter's kernels stand against their ceilings at the largest size."""
    mine = _rows(run, chapter.kernels)
    n = max(r["M"] for r in mine)
    peak = _peak(run)
    parts = []
    for row in (r for r in mine if r["M"] == n):
        rate = peaks.units_peak(row, peak)
        of = (f"{100 * row['gflops'] / rate:.0f}% of the {row['peak_kind'] or peaks.units(row)} peak "
              f"({rate / 1000:.1f} TFLOP/s)" if rate else "peak unknown for this device")
        parts.append(f"`{tables.label(row)}` {_tflops(row['gflops'])} TFLOP/s, {of}")
    base = [r for r in _rows(run, (BASELINE,)) if r["M"] == n and r["precision"] in {r["precision"] for r in mine}]
    parts += [f"`{tables.label(r)}` {_tflops(r['gflops'])}" for r in base]
    source = f" Peaks: {peak.source} (`mlx_sgemm.bench.peaks`)." if peak.fp32_gflops else ""
    return f"At {n}^3 on {run.rows[0]['device']}: " + "; ".join(parts) + "." + source


def show_chapter(run: sweep.Run, name: str, out: Path) -> None:
    """Display a chapter's figure (also written to ``out``), table and ceiling line."""
    from IPython.display import Image, Markdown, display

    chapter = CHAPTERS[name]
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"chapter_{name}.png"
    plots.chapter(run.rows, chapter.kernels, path, run.recorded, ceilings(run, chapter), chapter.earlier)
    display(Image(filename=str(path)))
    display(Markdown(table(run, chapter) + "\n\n" + ceiling_text(run, chapter)))


def show_int8_emulation(out: Path) -> None:
    """Display the INT8 emulation chapter's speed: the recorded runs it reads
    (in either mode: :mod:`mlx_sgemm.bench.emulation_results`), its figure
    (also written to ``out``), the products' table with the ceiling line, and
    the phases' table."""
    from IPython.display import Image, Markdown, display

    speed = emulation_results.recorded_speed()
    if speed is None:
        display(Markdown("No INT8 emulation run is recorded: `python benchmarks/int8_emulation.py` records one "
                         "on a Hopper GPU."))
        return
    peak = peaks.lookup(speed.device)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "chapter_int8_emulated.png"
    plots.emulation(emulation_results.speed_series(speed.rows, peak), emulation_results.phase_bars(speed.rows), path,
                    f"int8_emulated next to mx.matmul (cuBLAS SGEMM) and matmul\n{speed.device} · {speed.date} "
                    "(recorded run)")
    display(Markdown(emulation_results.where(speed, emulation_results.recorded_accuracy())))
    display(Image(filename=str(path)))
    display(Markdown(emulation_results.speed_table(speed.rows, peak) + "\n\n"
                     + emulation_results.ceiling_text(speed.rows, peak)))
    display(Markdown(emulation_results.phase_table(speed.rows, peak)))


def show_int8_accuracy() -> None:
    """Display the INT8 emulation's recorded accuracy table and what it counts."""
    from IPython.display import Markdown, display

    accuracy = emulation_results.recorded_accuracy()
    if accuracy is None:
        display(Markdown("No accuracy table of the INT8 emulation is recorded: `python benchmarks/int8_emulation.py "
                         "--accuracy --accuracy-csv ...` records one on a Hopper GPU."))
        return
    display(Markdown(emulation_results.accuracy_table(accuracy.rows) + "\n\n"
                     + emulation_results.accuracy_summary(accuracy.rows)))


# Chapter 8's live shapes: a prefill-sized projection, a square product, and a token's.
HALF_SHAPES = ((512, 14336, 4096), (4096, 4096, 4096), (1, 4096, 4096))


def half_precision_table() -> str:
    """Chapter 8 as Markdown: live on a CUDA GPU, ``x @ W.T`` in bfloat16 and
    float16 at HALF_SHAPES, ours against mx.matmul one product at a time; else
    (or in recorded mode) the newest recorded shape suite's half rows."""
    from ..pages import half_precision

    if mode() == "recorded" or device.backend() != device.CUDA:
        return half_precision.suite_table()
    import mlx.core as mx
    import numpy as np

    from .. import ops

    lines = [f"Measured now on {device.name()}, one product per evaluation, `x @ W.T`:", "",
             "| dtype | M x N x K | ours, us | mx.matmul, us | x mx.matmul |", "|---|---|---:|---:|---:|"]
    for dtype in half_precision.HALF_DTYPES:
        for m, n, k in HALF_SHAPES:
            rng = np.random.default_rng(0)
            x = mx.array(rng.standard_normal((m, k), dtype=np.float32)).astype(getattr(mx, dtype))
            w = mx.array(rng.standard_normal((n, k), dtype=np.float32)).astype(getattr(mx, dtype))
            mx.eval(x, w)
            t = timing.alternating_medians({"ours": lambda: ops.matmul(x, w.T), "mx": lambda: mx.matmul(x, w.T)},
                                           calls=timing.ONE_AT_A_TIME)
            lines.append(f"| {dtype} | {m}x{n}x{k} | {t['ours'] * 1e6:,.0f} | {t['mx'] * 1e6:,.0f} "
                         f"| {t['mx'] / t['ours']:.2f}x |")
    return "\n".join(lines)


def show_half_precision() -> None:
    """Display :func:`half_precision_table`."""
    from IPython.display import Markdown, display

    display(Markdown(half_precision_table()))


def accuracy_rows(run: sweep.Run) -> tuple[list[dict], str]:
    """The precision modes' errors, and a sentence on where they come from:
    measured now on the GPU (live), else the newest recorded precision-modes
    run, else the recorded sweep's error column (normal inputs only)."""
    if not run.recorded:
        rows = precision_modes.measure_modes(live_sizes())
        return rows, f"Measured now on {rows[0]['device']}."
    path = precision_modes.newest_recorded()
    if path is not None:
        rows = precision_modes.read_csv(path)
        return rows, f"Recorded: `{path.name}` ({rows[0]['device']}, MLX {rows[0]['mlx_version']}, {rows[0]['date']})."
    return precision_modes.from_sweep(run.rows), (
        f"Recorded: the error column of `{run.source.name}`, normal inputs. No run on wide-range inputs is "
        "recorded yet (`python benchmarks/precision_modes.py` records one on a GPU; on a GPU this notebook "
        "measures them live).")


def accuracy_table(rows: list[dict]) -> str:
    """Markdown: each kernel and precision's error at the largest size, a column per kind of input."""
    n = max(r["M"] for r in rows)
    kinds = [k for k in precision_modes.INPUTS if any(r["inputs"] == k for r in rows)]
    cell = {(tables.label(r), r["inputs"]): r["error"] for r in rows if r["M"] == n}
    labels = list(dict.fromkeys(tables.label(r) for r in rows if r["M"] == n))
    lines = [f"| {n}^3 | " + " | ".join(f"{k} inputs" for k in kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for name in labels:
        errors = (f"{cell[(name, k)]:.1e}" if (name, k) in cell else "-" for k in kinds)
        lines.append(f"| `{name}` | " + " | ".join(errors) + " |")
    return "\n".join(lines)


def show_accuracy(run: sweep.Run, out: Path) -> None:
    """Display the accuracy section's figure (also written to ``out``) and table."""
    from IPython.display import Image, Markdown, display

    rows, where = accuracy_rows(run)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "accuracy.png"
    plots.errors(rows, path, run.recorded, precision_modes.INPUTS)
    display(Markdown(where))
    display(Image(filename=str(path)))
    display(Markdown(accuracy_table(rows)))


def show_overview(run: sweep.Run, out: Path) -> None:
    """Display every kernel's table per size and the benchmark's three plots (written to ``out``)."""
    from IPython.display import Image, Markdown, display

    display(Markdown(tables.tables(run.rows)))
    for path in plots.write_all(run.rows, out, run.recorded, run.peak_gflops, run.bandwidth_gbs):
        display(Image(filename=str(path)))


def markdown_table(rows: list[dict], formats: dict[str, str] | None = None) -> str:
    """Markdown: a column per key of the rows, values through ``formats`` ("{:.1%}") where given."""
    formats = formats or {}
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(formats.get(k, "{}").format(row[k]) for k in keys) + " |")
    return "\n".join(lines)


def examples_dir() -> Path:
    """The checkout's examples/ (the notebook's model section imports examples/digits_mlp.py)."""
    path = Path(__file__).resolve().parent.parent.parent / "examples"
    if not (path / "digits_mlp.py").is_file():
        raise FileNotFoundError(f"examples/digits_mlp.py not found at {path}: the notebook runs from a source checkout")
    return path
