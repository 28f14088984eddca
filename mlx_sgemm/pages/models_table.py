"""The newest recorded run of models (``benchmarks/model_speed.py`` writes
``benchmarks/results/models-<date>-<device>.csv``): a row per model, dtype and
precision, with the prefill and decode ratios to MLX and the first call's
latencies in a new process and with the kernels cached."""

from __future__ import annotations

import csv
from pathlib import Path

from ..bench import results

GLOB = "models-*.csv"
COLUMNS = ("date", "device", "mlx", "commit", "model", "dtype", "precision", "phase", "tokens", "ours_s", "mlx_s",
           "ratio")
RATIO_PHASES = ("prefill", "decode")  # ratio = mlx_s / ours_s: > 1, ours is faster
LATENCY_PHASES = (("first forward", "first_forward_new_process", "first_forward_cached"),
                  ("first decode", "first_decode_new_process", "first_decode_cached"))
NONE_YET = ("No run of real models is recorded yet (`benchmarks/model_speed.py` records one as "
            "`benchmarks/results/models-<date>-<device>.csv`).")


def newest(directories=None) -> Path | None:
    """The newest models-*.csv of ``directories`` (default: the recorded runs'), or None."""
    if directories is None:
        return results.newest_recorded(pattern=GLOB)
    return results.newest_recorded(directories, GLOB)


def _read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames} != {list(COLUMNS)}")
        return list(reader)


def _seconds(text: str) -> str:
    s = float(text)
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def _latency(row: dict | None) -> str:
    """Ours, and the unmodified model's in brackets: MLX has first-call costs of its own."""
    return "-" if row is None else f"{_seconds(row['ours_s'])} ({_seconds(row['mlx_s'])})"


def block(directories=None) -> str:
    """The models table of the newest run, or a one-line note where there is none."""
    path = newest(directories)
    if path is None:
        return NONE_YET
    rows = _read(path)
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault((r["model"], r["dtype"], r["precision"]), {})[r["phase"]] = r
    heading = ["model", "dtype", "precision", *(f"{p} (x MLX)" for p in RATIO_PHASES),
               *(f"{name}: new process / cached" for name, *_ in LATENCY_PHASES)]
    lines = ["| " + " | ".join(heading) + " |", "|---|---|---|" + "---:|" * (len(heading) - 3)]
    for (model, dtype, precision), phases in groups.items():
        cells = [f"`{model}`", dtype, precision]
        cells += [f"{float(phases[p]['ratio']):.2f}x" if p in phases else "-" for p in RATIO_PHASES]
        for _, new, cached in LATENCY_PHASES:
            cells.append(" / ".join(_latency(phases.get(p)) for p in (new, cached)))
        lines.append("| " + " | ".join(cells) + " |")
    first = rows[0]
    # A run may hold rows measured on several commits (a model re-measured after a change).
    commits = list(dict.fromkeys(r["commit"] for r in rows if r["commit"]))
    commit = (f", commit{'s' if len(commits) > 1 else ''} " + ", ".join(f"`{c}`" for c in commits)) if commits else ""
    lines.append(f"\n{first['device']}, MLX {first['mlx']}, {first['date']}{commit} "
                 f"(`benchmarks/results/{path.name}`). x MLX: MLX's time over ours (above 1, ours is faster); "
                 "precision float32 is against MLX with `MLX_ENABLE_TF32=0`, tf32 against MLX's default. "
                 "First calls: ours (the unmodified model's in brackets), each model alone in its process.")
    return "\n".join(lines)
