"""One benchmark session, shared by the command line and the notebook: measure
live on a GPU, or load the newest recorded run where there is none, showing
the recorded rows the same options ask for."""

from __future__ import annotations

import datetime
import math
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SIZES = (256, 512, 1024, 2048, 4096, 8192)
REPEATS = 20  # timed runs per measurement, the median kept (the recorded runs' too)


@dataclass
class Run:
    rows: list[dict]
    recorded: bool  # True: loaded from benchmarks/results, not measured now
    note: str  # what the rows are, for a person
    peak_gflops: float | None
    bandwidth_gbs: float | None
    csv: Path | None = None  # where the rows shown were written (None: not written)
    source: Path | None = None  # the recorded run they come from (None: measured now)


class NoRecordedRows(LookupError):
    """The recorded run has no row for the shapes, kernels, precisions, dtypes and calls asked."""


def _listed(what: str, values) -> str:
    """"shapes 256x256x256, 1x4096x4096" (by work), "kernels naive, tile_16" (by name)."""
    if what == "shapes":
        return "shapes " + ", ".join("x".join(map(str, s)) for s in sorted(values, key=lambda s: (math.prod(s), s)))
    return f"{what} " + ", ".join(sorted(values))


def recorded_subset(rows: list[dict], name: str, shapes=None, kernels=None, precisions=None, dtypes=None,
                    calls=None):
    """The recorded ``rows`` of ``shapes`` (M, N, K), ``kernels``,
    ``precisions``, ``dtypes`` and ``calls`` (a way of calling; None: any), with
    mx.matmul's rows beside them (every ratio is to it), and a sentence on what
    was asked that the recording lacks ("" if nothing). Raises NoRecordedRows,
    naming what was asked and what the recording has, when no kernel's row fits."""
    from .measure import BASELINE

    asked = {"shapes": shapes and {tuple(s) for s in shapes}, "kernels": kernels and set(kernels),
             "precisions": precisions and set(precisions), "dtypes": dtypes and set(dtypes),
             "calls": calls and {calls}}
    has = {"shapes": {(r["M"], r["N"], r["K"]) for r in rows},
           "kernels": {r["kernel"] for r in rows} - {BASELINE}, "precisions": {r["precision"] for r in rows},
           "dtypes": {r["dtype"] for r in rows}, "calls": {r["calls"] for r in rows}}

    def fits(row) -> bool:
        return ((not asked["shapes"] or (row["M"], row["N"], row["K"]) in asked["shapes"])
                and (not asked["kernels"] or row["kernel"] in asked["kernels"] or row["kernel"] == BASELINE)
                and (not asked["precisions"] or row["precision"] in asked["precisions"])
                and (not asked["dtypes"] or row["dtype"] in asked["dtypes"])
                and (not asked["calls"] or row["calls"] in asked["calls"]))

    chosen = [r for r in rows if fits(r)]
    if all(r["kernel"] == BASELINE for r in chosen):
        # The filters that leave something out (a default the whole recording fits says nothing).
        wanted = "; ".join(_listed(w, v) for w, v in asked.items() if v and not v >= has[w])
        raise NoRecordedRows(
            f"the recorded run {name} has no rows" + (f" for {wanted}" if wanted else "")
            + "; it has " + "; ".join(_listed(w, v) for w, v in has.items()))
    lacking = [_listed(w, asked[w] - has[w]) for w in asked if asked[w] and asked[w] - has[w]]
    return chosen, (f"It has no rows for {'; '.join(lacking)}." if lacking else "")


def _from_shape_suites(rows: list[dict], device_name: str, shapes, dtypes, calls) -> tuple[list[dict], str]:
    """``rows`` with the rows of ``shapes`` (M, N, K) they lack added, for each
    precision, from the newest recorded shape suite of ``device_name`` that
    has them for ``dtypes`` timed the way ``calls`` says (``matmul`` and
    ``mx.matmul`` only; a suite may hold one precision), and a sentence naming
    the files ("" if none)."""
    from . import results

    have = {(r["M"], r["N"], r["K"]) for r in rows}
    missing = {tuple(s) for s in shapes} - have
    if not missing:
        return rows, ""
    added, files = [], []
    for path in results.recorded_runs("shapes-*.csv"):  # newest first
        taken = {r["precision"] for r in added}
        suite = [r for r in results.shape_suite_rows(path)
                 if r["device"] == device_name and (r["M"], r["N"], r["K"]) in missing
                 and r["dtype"] in dtypes and r["calls"] == calls and r["precision"] not in taken]
        if suite:
            added += suite
            files.append(path.name)
    if not added:
        return rows, ""
    found = {(r["M"], r["N"], r["K"]) for r in added}
    return rows + added, (f"Rows of {_listed('shapes', found)} from the shape suite{'s' if len(files) > 1 else ''} "
                          f"{', '.join(files)} (matmul and mx.matmul only).")


def collect(
    sizes=None, shapes=(), kernels=None, precisions=None, repeats: int | None = None,
    peak_gflops=None, bandwidth=None, out: Path = Path("outputs"),
    force_recorded: bool = False, progress: bool = True, dtypes=None, calls: str | None = None,
    per_evaluation: int | None = None,
) -> Run:
    """Measure ``sizes`` (square; None: DEFAULT_SIZES) and ``shapes`` (M, N, K)
    with ``kernels`` and ``precisions`` (None: all) on operands of ``dtypes``
    (None: float32), ``repeats`` timed runs each (None: REPEATS), timed the way
    ``calls`` says (None: one at a time; "independent": ``per_evaluation``
    products an evaluation, None: as many as last about 5 ms), or, without a
    GPU or with ``force_recorded``, show the newest recorded run's rows for them
    (all its shapes when neither ``sizes`` nor ``shapes`` is given; shapes it
    lacks from the newest shape suite recorded on the same GPU; ``calls`` None:
    one at a time where the run has it, else the way it has). Either way the
    rows shown are written as a CSV under ``out`` (None: not written), a
    recorded run's named ``recorded-<its name>``, a live one
    ``bench-<date>.csv``, ``bench-<date>-independent.csv`` for independent calls."""
    # cuBLAS's float32 baseline (mx.matmul in this process) needs TF32 off, and
    # MLX reads the switch once, at its first product: set it before that.
    os.environ.setdefault("MLX_ENABLE_TF32", "0")
    from ..dispatch import device
    from . import measure, peaks, results, timing

    dtypes = list(dtypes or ["float32"])

    if force_recorded or device.backend() == device.CPU_FALLBACK:
        path = results.newest_recorded()
        why = ("Recorded results requested" if force_recorded else
               "No GPU: MLX on this machine has neither a Metal nor a CUDA backend, so the "
               "kernels cannot run here")
        if path is None:
            raise FileNotFoundError(f"{why}, and no recorded results were found (benchmarks/results/bench-*.csv)")
        squares = [(s, s, s) for s in sizes or ()]
        recorded = results.read_csv(path)
        shown_calls = calls or results.headline_calls(recorded)
        recorded, suite_note = _from_shape_suites(recorded, recorded[0]["device"], shapes, dtypes, shown_calls)
        rows, lacking = recorded_subset(recorded, path.name, [*squares, *shapes] or None, kernels, precisions,
                                        dtypes, shown_calls)
        found = peaks.lookup(rows[0]["device"])
        how = f"Timed {timing.TIMED[shown_calls]}."
        if calls is None and shown_calls != timing.ONE_AT_A_TIME:
            how = f"It was timed {timing.TIMED[shown_calls]} only, not {timing.ONE_AT_A_TIME}."
        note = " ".join(filter(None, (
            f"{why}. Showing the newest run recorded on a real GPU: {path.name} "
            f"({rows[0]['device']}, MLX {rows[0]['mlx_version']}, {rows[0]['date']}).", how, suite_note, lacking)))
        written = None
        if out is not None:
            written = results.write_csv(rows, Path(out) / f"recorded-{path.name}")
            note += f" The rows shown are written to {written} (recorded, not measured here)."
        return Run(rows, True, note, peak_gflops or found.fp32_gflops,
                   bandwidth or found.bandwidth_gbs, written, path)
    peak = measure.device_peak(peak_gflops, bandwidth)
    calls = calls or timing.ONE_AT_A_TIME
    shapes = [(s, s, s) for s in (DEFAULT_SIZES if sizes is None else sizes)] + [tuple(s) for s in shapes]
    rows = measure.as_dicts(measure.measure(
        shapes, list(kernels or measure.KERNELS), list(precisions or measure.PRECISIONS),
        repeats or REPEATS, peak, progress, dtypes, calls, per_evaluation))
    # Named by the way of calling, so that a run of each into one folder keeps both.
    suffix = "" if calls == timing.ONE_AT_A_TIME else f"-{calls}"
    path = results.write_csv(rows, out / f"bench-{datetime.date.today().isoformat()}{suffix}.csv")
    peak_text = f"{peak.fp32_gflops:,.0f} GFLOP/s" if peak.fp32_gflops else "unknown"
    how = timing.TIMED[calls]
    if per_evaluation and calls == timing.INDEPENDENT:
        how = how.replace("several products", f"{per_evaluation} products")
    note = (f"Live run on {device.name()} ({device.backend()}); FP32 peak {peak_text} "
            f"({peak.source}); operands {', '.join(dtypes)}; timed {how}. Results written to {path}.")
    return Run(rows, False, note, peak.fp32_gflops, peak.bandwidth_gbs, path)
