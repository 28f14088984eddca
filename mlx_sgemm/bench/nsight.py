"""Nsight Compute's raw CSV page, as the benchmarks that profile kernels ask
for it and read it (benchmarks/ncu_half_gemv.py, benchmarks/ncu_split.py)."""

from __future__ import annotations

import csv
import io
import sys

# A metric's unit as ncu prints it (by version: ns or nsecond) -> the factor to
# us, MB or GHz; a percentage, or a count without a unit, stays as it is.
_SCALES = {
    "ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
    "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3, "Tbyte": 1e6,
    "hz": 1e-9, "Khz": 1e-6, "Mhz": 1e-3, "Ghz": 1.0, "Hz": 1e-9, "KHz": 1e-6, "MHz": 1e-3, "GHz": 1.0,
    "cycle/second": 1e-9, "cycle/usecond": 1e-3, "cycle/nsecond": 1.0,
    "%": 1.0, "": 1.0,
}


def command(kernels: str, metrics: tuple[str, ...] | list[str], program: list[str]) -> list[str]:
    """ncu's command line for ``program`` (run by this Python): the kernels
    whose names match the regex ``kernels``, each replayed with the caches
    flushed before it and the clocks left as they run, ``metrics`` printed
    as the raw CSV page."""
    return ["ncu", "--csv", "--page", "raw", "--cache-control", "all", "--clock-control", "none",
            "-k", f"regex:{kernels}", "--metrics", ",".join(metrics), sys.executable, *program]


def rows(ncu_output: str) -> list[dict]:
    """A row a kernel of ncu's raw CSV page, in launch order: its quoted
    lines (the program's own lines left out), a header, a row of units, then
    the kernels. Read a metric with :func:`number`."""
    lines = [line for line in ncu_output.splitlines() if line.startswith('"')]
    units, *kernels = csv.DictReader(io.StringIO("\n".join(lines)))
    return [dict(row, _units=units) for row in kernels]


def number(row: dict, metric: str) -> float:
    """``metric`` of one of :func:`rows` as a float (thousands separators
    dropped: 32,416), in us, MB or GHz where its unit is a time, a size or a
    rate; a unit not known here is refused by name, not read as another."""
    unit = row["_units"].get(metric, "")
    if unit not in _SCALES:
        raise ValueError(f"ncu printed {metric} in {unit!r}, a unit mlx_sgemm.bench.nsight does not know")
    return float(row[metric].replace(",", "")) * _SCALES[unit]
