"""The recorded runs of models (``benchmarks/model_speed.py`` writes
``benchmarks/results/models-<date>-<device>.csv``): a row per GPU, model,
dtype and precision, from the newest run that measured it, with the prefill
and decode ratios to MLX and the first call's latencies in a new process and
with the kernels cached. A run may measure a few configurations again (after
a change, or on another GPU); the others keep their older rows."""

from __future__ import annotations

import csv
from pathlib import Path

from ..bench import results

GLOB = "models-*.csv"
COLUMNS = ("date", "device", "mlx", "commit", "model", "dtype", "precision", "phase", "tokens", "ours_s", "mlx_s",
           "ratio")
# ratio = mlx_s / ours_s: > 1, ours is faster. generate: decode as mlx_lm.generate
# runs it (the next step built while one runs); runs before it have none.
RATIO_PHASES = ("prefill", "decode", "generate")
LATENCY_PHASES = (("first forward", "first_forward_new_process", "first_forward_cached"),
                  ("first decode", "first_decode_new_process", "first_decode_cached"))
NONE_YET = ("No run of real models is recorded yet (`benchmarks/model_speed.py` records one as "
            "`benchmarks/results/models-<date>-<device>.csv`).")


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
    """The models table, or a one-line note where no run is recorded."""
    paths = results.recorded_runs(GLOB, directories)
    if not paths:
        return NONE_YET
    groups: dict[tuple, dict] = {}  # (device, model, dtype, precision) -> phase -> row, from its newest run
    sources: dict[Path, list[dict]] = {}  # the runs that gave rows, newest first
    for path in paths:
        fresh: dict[tuple, dict] = {}
        for r in _read(path):
            key = (r["device"], r["model"], r["dtype"], r["precision"])
            if key not in groups:
                fresh.setdefault(key, {})[r["phase"]] = r
        if fresh:
            groups.update(fresh)
            sources[path] = [r for phases in fresh.values() for r in phases.values()]
    heading = ["GPU", "model", "dtype", "precision", *(f"{p} (x MLX)" for p in RATIO_PHASES),
               *(f"{name}: new process / cached" for name, *_ in LATENCY_PHASES)]
    lines = ["| " + " | ".join(heading) + " |", "|---|---|---|---|" + "---:|" * (len(heading) - 4)]
    for (device, model, dtype, precision), phases in sorted(groups.items()):
        cells = [device, f"`{model}`", dtype, precision]
        cells += [f"{float(phases[p]['ratio']):.2f}x" if p in phases else "-" for p in RATIO_PHASES]
        for _, new, cached in LATENCY_PHASES:
            cells.append(" / ".join(_latency(phases.get(p)) for p in (new, cached)))
        lines.append("| " + " | ".join(cells) + " |")
    notes = []
    for path, rows in sources.items():
        first = rows[0]
        # A run may hold rows measured on several commits (a model re-measured after a change).
        commits = list(dict.fromkeys(r["commit"] for r in rows if r["commit"]))
        commit = (f", commit{'s' if len(commits) > 1 else ''} " + ", ".join(f"`{c}`" for c in commits)
                  if commits else "")
        notes.append(f"{first['device']}, MLX {first['mlx']}, {first['date']}{commit} "
                     f"(`benchmarks/results/{path.name}`)")
    lines.append("\n" + "; ".join(notes) + ". x MLX: MLX's time over ours (above 1, ours is faster); "
                 "precision float32 is against MLX with `MLX_ENABLE_TF32=0`, tf32 against MLX's default. "
                 "First calls: ours (the unmodified model's in brackets), each model alone in its process.")
    return "\n".join(lines)
