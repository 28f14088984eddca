"""Benchmark results on disk: one CSV row per measurement, and the recorded runs.

A live run writes ``outputs/bench-<date>.csv``. Runs recorded on a real GPU are
committed under ``benchmarks/results/bench-*.csv``; without a GPU the benchmark
shows the newest of them.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

from . import peaks, timing
from .measure import Measurement

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # mlx_sgemm/
# An installed wheel carries the recorded runs as mlx_sgemm/recorded (see
# pyproject.toml); a source checkout has them in benchmarks/results.
_RECORDED_CANDIDATES = (_PACKAGE_DIR / "recorded", _PACKAGE_DIR.parent / "benchmarks" / "results")

_NUMERIC = {"M": int, "N": int, "K": int, "seconds": float, "gflops": float,
            "pct_peak": float, "x_matmul": float, "error": float, "spread": float}
# The columns of runs recorded before peak_kind, spread and the version columns,
# and of those recorded before dtype and calls.
_FIRST_COLUMNS = Measurement.columns()[:14]
_BEFORE_DTYPE_COLUMNS = Measurement.columns()[:18]
# What runs recorded before the dtype and calls columns measured: float32
# operands (accuracy.random_operands), and median_seconds' independent calls,
# the only way the sweep and the shape suite's default timed before the column
# (its "--one-at-a-time" runs say so in their calls column).
BEFORE_THE_COLUMNS = {"dtype": "float32", "calls": timing.INDEPENDENT}


def dtype_of(row: dict) -> str:
    """A recorded row's operand dtype; float32 for a run without the column."""
    return row.get("dtype") or BEFORE_THE_COLUMNS["dtype"]


def calls_of(row: dict) -> str:
    """A recorded row's way of calling; independent for a run without the column."""
    return row.get("calls") or BEFORE_THE_COLUMNS["calls"]


def headline_calls(rows) -> str:
    """The way of calling a run's figures are quoted in: one at a time where
    the run has it (a user's call), else the way it has."""
    found = {calls_of(r) for r in rows}
    return timing.ONE_AT_A_TIME if timing.ONE_AT_A_TIME in found or not found else found.pop()


def write_csv(rows: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=Measurement.columns())
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return path


def write_table(rows: list[dict], path: str | Path | None, *, echo: bool = True) -> None:
    """A benchmark script's rows: each printed as it is (``echo``, columns
    joined by " | "), and written to ``path`` as CSV with the first row's keys
    as columns (nothing written when ``path`` is None)."""
    if echo:
        for row in rows:
            print(" | ".join(str(v) for v in row.values()), flush=True)
    if path is None or not rows:
        return
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def append_rows(rows: list[dict], path: str | Path) -> bool:
    """Append a benchmark script's rows to the CSV at ``path`` (a header first
    where it is new), the first row's keys as columns; False, with nothing
    written and a line saying so, where the file holds other columns."""
    new = not os.path.exists(path)
    if not new:
        with open(path, newline="") as f:
            header = next(csv.reader(f), None)
        if header != list(rows[0]):
            print(f"{path} has other columns ({header}): not appended; name a new file")
            return False
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)
    return True


def read_csv(path: Path) -> list[dict]:
    """Rows of a results CSV; missing values become None. Checks the schema.

    Runs recorded before the later columns are read too. Before peak_kind,
    spread and the version columns: the % of peak, which was of the FP32 rate
    for every row, is recomputed against the peak of each row's units
    (bench.peaks.units) where the device is known, and the other new columns
    are None. Before dtype and calls: what those runs measured,
    :data:`BEFORE_THE_COLUMNS`."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        oldest = reader.fieldnames == _FIRST_COLUMNS
        if reader.fieldnames != Measurement.columns() and not oldest and reader.fieldnames != _BEFORE_DTYPE_COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames} != {Measurement.columns()}")
        rows = []
        for row in reader:
            row = {**dict.fromkeys(Measurement.columns()), **BEFORE_THE_COLUMNS, **row}
            for key, cast in _NUMERIC.items():
                row[key] = cast(row[key]) if row[key] not in ("", None) else None
            if oldest:
                _with_units_peak(row)
            rows.append(row)
    return rows


def _with_units_peak(row: dict) -> None:
    # These runs predate the float16 split: matmul ran 3xTF32 or one TF32 pass.
    # The percentage follows the kind set here.
    row["peak_kind"] = peaks.units(row, split=False)
    pct = peaks.pct_of_units_peak(row, row["gflops"], peaks.lookup(row["device"]))
    if pct is not None:
        row["pct_peak"] = pct


def shape_suite_rows(path: Path) -> list[dict]:
    """A recorded shape suite (``benchmarks/shape_suite.py``: ``matmul`` against
    ``mx.matmul`` on model shapes) as the benchmark's rows: two per shape, one
    product each (no batch, B row-major), with GFLOP/s and % of the units'
    peak worked out from the times, no spread (the suite records none), its
    dtype and calls (:func:`dtype_of`, :func:`calls_of`)."""
    rows = []
    with open(path, newline="") as f:
        for found in csv.DictReader(f):
            if found["batch"] or found["b_transposed_view"] != "False":
                continue
            m, n, k = (int(found[d]) for d in "MNK")
            for kernel, seconds, ratio, error in (
                ("mx.matmul", found["mx_matmul_s"], 1.0, found["mx_matmul_error"]),
                ("matmul", found["matmul_s"], float(found["ratio"]), found["error"]),
            ):
                row = {**dict.fromkeys(Measurement.columns()), "device": found["device"],
                       "mlx_version": found["mlx_version"], "date": found["date"], "backend": "cuda",
                       "kernel": kernel, "precision": found["precision"], "M": m, "N": n, "K": k,
                       "seconds": float(seconds), "x_matmul": ratio, "error": float(error) if error else None,
                       "dtype": dtype_of(found), "calls": calls_of(found)}
                row["gflops"] = 2 * m * n * k / row["seconds"] / 1e9
                row["peak_kind"] = peaks.units(row)
                row["pct_peak"] = peaks.pct_of_units_peak(row, row["gflops"], peaks.lookup(row["device"]))
                rows.append(row)
    return rows


def recorded_runs(pattern: str, directories=None) -> list[Path]:
    """The recorded runs whose names match ``pattern``, newest first, from the
    first of ``directories`` (default: :func:`recorded_directories`) that has any."""
    for directory in recorded_directories() if directories is None else directories:
        runs = sorted(Path(directory).glob(pattern), key=oldest_first, reverse=True)
        if runs:
            return runs
    return []


def recorded_directories() -> list[Path]:
    """Where the recorded runs are (the wheel's copy, else the checkout's)."""
    return [d for d in _RECORDED_CANDIDATES if d.is_dir()]


def run_date(path: Path) -> str | None:
    """The date (YYYY-MM-DD) in a recorded run's file name, or None."""
    found = re.search(r"\d{4}-\d{2}-\d{2}", Path(path).name)
    return found.group() if found else None


def oldest_first(path: Path) -> tuple[str, str]:
    """Sort key of recorded runs: by the date in the name, then by the name
    without its extension, so that a run recorded again the same day, named
    as the first with a suffix (``...-h100-whole-lines.csv`` after
    ``...-h100.csv``), comes after it."""
    return run_date(path) or "", Path(path).stem


def newest_recorded(directories=_RECORDED_CANDIDATES, pattern: str = "bench-*.csv") -> Path | None:
    """The most recent recorded run whose name matches ``pattern`` (by the date
    in its name), or None."""
    for directory in directories:
        runs = sorted(Path(directory).glob(pattern), key=oldest_first)
        if runs:
            return runs[-1]
    return None
