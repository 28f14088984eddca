"""What the README's set-up commands install, from the newest
``benchmarks/results/install-size-*.csv`` (``benchmarks/install_size.py``)."""

from __future__ import annotations

import csv

from ..bench import results


def block() -> str:
    path = results.newest_recorded(pattern="install-size-*.csv")
    if path is None:
        return "(not measured yet: `python benchmarks/install_size.py` measures it)"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    lines = ["| to | extras | packages | size |", "|---|---|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['purpose']} | `.[{r['extras']}]` | {r['packages']} | {int(r['megabytes']):,} MB |")
    first = rows[0]
    lines.append(f"\nMeasured in fresh virtual environments (Python {first['python']}, {first['platform']}, "
                 f"{first['date']}; `benchmarks/install_size.py`, `benchmarks/results/{path.name}`).")
    return "\n".join(lines)
