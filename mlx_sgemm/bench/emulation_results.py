"""The INT8 emulation's recorded runs, read for the notebook's chapter on
``mlx_sgemm.int8_emulated``: its speed next to cuBLAS SGEMM and ``matmul``,
the time of each of its phases with what bounds it, and its accuracy.

``benchmarks/int8_emulation.py`` records them on a Hopper GPU:

* ``int8-emulation-<date>-<gpu>.csv``: a row per product (``mx.matmul``, which
  is cuBLAS SGEMM there, ``matmul``, ``int8_emulated moduli=s`` and
  ``int8_emulated (device's choice)``) and per phase of the op (``phase:
  ...``, the whole chain without the op's Python, ``assess``, which reads the
  choice back, and the mma.sync residue GEMM for comparison), with the moduli, microseconds, GFLOP/s (INT8 GOPS for the
  products) and, for the products, the ratio to cuBLAS SGEMM and the error;
* ``int8-emulation-accuracy-<date>-<gpu>.csv``: per K and kind of input, what
  the op chose (moduli, bits a side, or the kernel it fell back to) and its
  normwise and componentwise errors next to cuBLAS SGEMM's.

Each phase is held against the ceiling of what it does: the products against
the INT8 tensor cores' peak (:mod:`mlx_sgemm.bench.peaks`), the others
against device memory's bandwidth, for the bytes they must move at the least
(:func:`traffic`: every operand read once, every result written once).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ..build import specs
from ..emulation import gpu
from . import peaks, results
from .measure import BASELINE

SPEED_GLOB = "int8-emulation-[0-9]*.csv"
ACCURACY_GLOB = "int8-emulation-accuracy-*.csv"
SPEED_COLUMNS = ("device", "kernel", "precision", "M", "N", "K", "moduli", "us", "gflops", "x_cublas_sgemm",
                 "error", "note")
ACCURACY_COLUMNS = ("device", "K", "inputs", "moduli", "bits", "computed_by", "normwise", "cublas_normwise",
                    "componentwise", "cublas_componentwise")
_SPEED_NUMERIC = {"M": int, "N": int, "K": int, "moduli": int, "us": float, "gflops": float,
                  "x_cublas_sgemm": float, "error": float}
_ACCURACY_NUMERIC = {"K": int, "moduli": int, "bits": int, "normwise": float, "cublas_normwise": float,
                     "componentwise": float, "cublas_componentwise": float}

EMULATED = "int8_emulated"
ADAPTIVE = "matmul"
_EMULATED_ROW = re.compile(rf"^{EMULATED} (?:moduli=(\d+)|\(device's choice\))$")
INT8 = "INT8"
INT8_GOPS, GBS = "INT8 GOPS", "GB/s"  # the units of a phase's rate


@dataclass(frozen=True)
class Recorded:
    """One recorded CSV and its rows."""

    path: Path
    rows: list[dict]

    @property
    def device(self) -> str:
        return self.rows[0]["device"]

    @property
    def date(self) -> str:
        return results.run_date(self.path) or "date not in the file name"


def _read(path: Path, columns: tuple[str, ...], numeric: dict) -> list[dict]:
    """The rows of ``path``, empty fields as None and ``numeric`` columns cast;
    ValueError if its columns are not ``columns`` or it has no rows."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != columns:
            raise ValueError(f"{path}: columns {reader.fieldnames} != {list(columns)}")
        rows = [{k: (numeric[k](v) if k in numeric else v) if v != "" else None for k, v in row.items()}
                for row in reader]
    if not rows:
        raise ValueError(f"{path}: no rows")
    return rows


def read_speed(path: Path) -> list[dict]:
    return _read(Path(path), SPEED_COLUMNS, _SPEED_NUMERIC)


def read_accuracy(path: Path) -> list[dict]:
    return _read(Path(path), ACCURACY_COLUMNS, _ACCURACY_NUMERIC)


def recorded_speed(directories=None) -> Recorded | None:
    """The newest recorded speed run (:data:`SPEED_GLOB`), or None."""
    path = results.newest_recorded(directories or results.recorded_directories(), SPEED_GLOB)
    return Recorded(path, read_speed(path)) if path else None


def recorded_accuracy(directories=None) -> Recorded | None:
    """The newest recorded accuracy table (:data:`ACCURACY_GLOB`), or None."""
    path = results.newest_recorded(directories or results.recorded_directories(), ACCURACY_GLOB)
    return Recorded(path, read_accuracy(path)) if path else None


# ---- the products: the op next to cuBLAS SGEMM and matmul -------------------------------------------------

def is_product(row: dict) -> bool:
    """A whole product (a row with a ratio to cuBLAS SGEMM), not a phase."""
    return row["kernel"] in (BASELINE, ADAPTIVE) or bool(_EMULATED_ROW.match(row["kernel"]))


def products(rows: list[dict]) -> list[dict]:
    return [r for r in rows if is_product(r)]


def shape(row: dict) -> str:
    m, n, k = row["M"], row["N"], row["K"]
    return f"{m}^3" if m == n == k else f"{m}x{n}x{k}"


def label(row: dict) -> str:
    """The product's name in tables and legends; the device's choice says what it chose."""
    if row["kernel"] == f"{EMULATED} (device's choice)":
        return f"{EMULATED} (device's choice: {row['moduli']} moduli)"
    return row["kernel"]


def units(row: dict) -> str:
    """What the product multiplies on: FP32 FMAs (cuBLAS SGEMM), 3xTF32
    (``matmul``), or INT8 tensor cores, s products per float32 product ("INT8 / s")."""
    if row["kernel"] == BASELINE:
        return peaks.FP32
    if row["kernel"] == ADAPTIVE:
        return peaks.THREE_TF32
    if _EMULATED_ROW.match(row["kernel"]):
        return f"{INT8} / {row['moduli']}"
    raise ValueError(f"not a product of the INT8 emulation's run: {row['kernel']!r}")


def units_peak(row: dict, peak: peaks.DevicePeak) -> float | None:
    """The float32-equivalent GFLOP/s of :func:`units` at their datasheet peak
    (the INT8 peak over s for s moduli, as 3xTF32 is the TF32 peak over 3), or None."""
    kind = units(row)
    if kind == peaks.FP32:
        return peak.fp32_gflops
    if kind == peaks.THREE_TF32:
        return peak.tf32_gflops / 3 if peak.tf32_gflops else None
    return peak.int8_gops / row["moduli"] if peak.int8_gops and row["moduli"] else None


def _pct(value: float, of: float | None) -> str:
    return f"{100 * value / of:.0f}%" if of else "peak unknown"


def speed_table(rows: list[dict], peak: peaks.DevicePeak) -> str:
    """Markdown: every product at every size, its float32-equivalent TFLOP/s
    (2MNK / time), ratio to cuBLAS SGEMM in the same process, % of its units'
    peak and normwise error."""
    lines = ["| M = N = K | kernel | TFLOP/s | x mx.matmul | % of its units' peak | error |",
             "|---:|---|---:|---:|---:|---:|"]
    for row in products(rows):
        ratio = f"{row['x_cublas_sgemm']:.2f}x" if row["x_cublas_sgemm"] is not None else "-"
        error = f"{row['error']:.1e}" if row["error"] is not None else "-"
        pct = f"{_pct(row['gflops'], units_peak(row, peak))} {units(row)}"
        lines.append(f"| {row['M']} | `{label(row)}` | {row['gflops'] / 1000:.1f} | {ratio} | {pct} | {error} |")
    return "\n".join(lines)


def speed_series(rows: list[dict], peak: peaks.DevicePeak) -> dict[str, list[tuple[str, float, float | None, float]]]:
    """For the figure: per shape, (label, GFLOP/s, units' peak, x cuBLAS SGEMM) of each product."""
    series = {}
    for row in products(rows):
        series.setdefault(shape(row), []).append(
            (label(row), row["gflops"], units_peak(row, peak), row["x_cublas_sgemm"]))
    return series


# ---- the phases -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Phase:
    key: str
    prefix: str  # the benchmark's row names start with it


# The op with the device's choice, in order: these add up to its time on the GPU.
PHASES = (
    Phase("statistics", "phase: line statistics"),
    Phase("choice", "phase: choice"),
    Phase("residues_a", "phase: residues of A"),
    Phase("residues_b", "phase: residues of B"),
    Phase("products", "phase: products"),
    Phase("fallback", "phase: fallback tiles"),
    Phase("reconstruct", "phase: reconstruct"),
)
# Phases that move next to nothing (the lines' statistics, a flag a block): no
# bandwidth to hold them against.
_SMALL_PHASES = ("choice", "fallback")
# Measured beside them: the choice read back (assess, a synchronization the op
# never makes), the chain in one call, the mma.sync GEMM.
ASSESS = Phase("assess", "assess")
CHAIN = Phase("chain", "all phases")
MMA_SYNC = Phase("mma_sync", "mma.sync residue GEMM")
_PHASE_KEYS = tuple(p.key for p in PHASES)
_INT8_PHASES = ("products", "mma_sync")


def _padded(x: int, to: int) -> int:
    return -(-x // to) * to


def traffic(key: str, m: int, n: int, k: int, s: int) -> int:
    """The bytes a phase moves at the least, for s moduli: float32 operands read
    once, int8 residues (padded to the products' tiles: A's rows to
    RESIDUE_TILE_M, B's columns to RESIDUE_TILE_N, K to gpu.K_TILE) written
    and read once, C written once. The lines' statistics (16 bytes a line)
    are left out."""
    kp = _padded(max(k, 1), gpu.K_TILE)
    mp, np_ = _padded(m, specs.RESIDUE_TILE_M), _padded(n, specs.RESIDUE_TILE_N)
    if key == "statistics":
        return 4 * (m * k + k * n)
    if key == "residues_a":
        return 4 * m * k + s * mp * kp
    if key == "residues_b":
        return 4 * k * n + s * np_ * kp
    if key == "products":
        return s * (mp + np_) * kp + s * m * np_  # a byte an output, rows of N padded to the tile
    if key == "mma_sync":
        return s * (m + n) * kp + 4 * s * m * n  # an int32 an output
    if key == "reconstruct":
        return s * m * np_ + 4 * m * n
    raise ValueError(f"no traffic model for phase {key!r}")


def _find(rows: list[dict], phase: Phase, m: int) -> dict | None:
    found = [r for r in rows if r["kernel"].startswith(phase.prefix) and r["M"] == m]
    if len(found) > 1:
        raise LookupError(f"{len(found)} rows for {phase.prefix!r} at M = {m}")
    return found[0] if found else None


def phase_sizes(rows: list[dict]) -> list[int]:
    """The sizes (M) whose phases were timed."""
    return sorted({r["M"] for r in rows if any(r["kernel"].startswith(p.prefix) for p in PHASES)})


def phase_rows(rows: list[dict], m: int) -> dict[str, dict]:
    """The rows of :data:`PHASES` at size ``m`` (all of them, or LookupError),
    and of assess, the chain and the mma.sync GEMM where timed."""
    found = {p.key: _find(rows, p, m) for p in (*PHASES, ASSESS, CHAIN, MMA_SYNC)}
    missing = [p.prefix for p in PHASES if found[p.key] is None]
    if missing:
        raise LookupError(f"the run has no row for {missing} at M = {m}")
    return {key: row for key, row in found.items() if row is not None}


def _name(row: dict) -> str:
    return row["kernel"].removeprefix("phase: ")


def breakdown(rows: list[dict], m: int, peak: peaks.DevicePeak) -> list[dict]:
    """Per phase at size ``m``: its name, microseconds, share of the phases'
    sum, bytes moved at the least (:func:`traffic`), and its rate against its
    ceiling: INT8 GOPS against the INT8 peak for the products, GB/s against
    the bandwidth for the others (none for the choice and the fallback's
    empty blocks). Then assess, the chain in one call and the mma.sync GEMM
    where timed (no share)."""
    found = phase_rows(rows, m)
    total = sum(found[p.key]["us"] for p in PHASES)
    out = []
    for key, row in found.items():
        n, k, s = row["N"], row["K"], row["moduli"]
        entry = {"key": key, "phase": _name(row), "us": row["us"], "share": None, "bytes": None, "rate": None,
                 "unit": None, "ceiling": None}
        if key in _PHASE_KEYS:
            entry["share"] = row["us"] / total
        if key in _INT8_PHASES:
            entry.update(bytes=traffic(key, m, n, k, s), rate=gpu.int8_ops(m, n, k, s) / row["us"] / 1e3,
                         unit=INT8_GOPS, ceiling=peak.int8_gops)
        elif key in _PHASE_KEYS and key not in _SMALL_PHASES:
            moved = traffic(key, m, n, k, s)
            entry.update(bytes=moved, rate=moved / row["us"] / 1e3, unit=GBS, ceiling=peak.bandwidth_gbs)
        out.append(entry)
    return out


def phase_table(rows: list[dict], peak: peaks.DevicePeak) -> str:
    """Markdown: :func:`breakdown` at every size whose phases were timed."""
    lines = ["| M = N = K | phase | moduli | µs | share | bytes at the least | rate | % of its ceiling |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for m in phase_sizes(rows):
        s = phase_rows(rows, m)["products"]["moduli"]
        for e in breakdown(rows, m, peak):
            share = f"{100 * e['share']:.0f}%" if e["share"] is not None else "-"
            moved = f"{e['bytes'] / 1e6:,.0f} MB" if e["bytes"] is not None else "-"
            rate = of = "-"
            if e["unit"] == INT8_GOPS:
                rate, of = f"{e['rate'] / 1000:,.0f} INT8 TOPS", f"{_pct(e['rate'], e['ceiling'])} INT8 peak"
            elif e["unit"] == GBS:
                rate, of = f"{e['rate']:,.0f} GB/s", f"{_pct(e['rate'], e['ceiling'])} bandwidth"
            lines.append(f"| {m} | {e['phase']} | {s} | {e['us']:,.0f} | {share} | {moved} | {rate} | {of} |")
    return "\n".join(lines)


def phase_bars(rows: list[dict]) -> dict[str, list[tuple[str, float]]]:
    """For the figure: per size, (phase, µs) of the op with the device's choice."""
    bars = {}
    for m in phase_sizes(rows):
        found = phase_rows(rows, m)
        s = found["products"]["moduli"]
        bars[f"{m}^3, {s} moduli"] = [(_name(found[p.key]), found[p.key]["us"]) for p in PHASES]
    return bars


def bound_seconds(m: int, n: int, k: int, s: int, peak: peaks.DevicePeak) -> float | None:
    """The op's time if its products ran at the INT8 peak and
    every other phase moved its :func:`traffic` at the memory bandwidth, one
    after another, as they run; None where either is unknown."""
    if not (peak.int8_gops and peak.bandwidth_gbs):
        return None
    moved = sum(traffic(p.key, m, n, k, s) for p in PHASES if p.key not in (*_INT8_PHASES, *_SMALL_PHASES))
    return gpu.int8_ops(m, n, k, s) / (peak.int8_gops * 1e9) + moved / (peak.bandwidth_gbs * 1e9)


def residue_reads(int8_gops: float) -> float:
    """GB/s of residues the products kernel reads into shared memory at
    ``int8_gops``: a RESIDUE_TILE_M x RESIDUE_TILE_N tile reads M + N bytes of
    residues (a byte of K from each row of A and of B) per 2 M N INT8
    operations. The blocks in flight share them through L2 (the tiles are
    walked in bands, int8_products.cu), so L2 serves these reads."""
    bm, bn = specs.RESIDUE_TILE_M, specs.RESIDUE_TILE_N
    return int8_gops * (bm + bn) / (2 * bm * bn)


def ceiling_text(rows: list[dict], peak: peaks.DevicePeak) -> str:
    """Markdown: at the largest size whose phases were timed, the products'
    INT8 rate against the peak, their share of the time and the L2 reads that
    rate takes (:func:`residue_reads`), the other phases' rates against the
    bandwidth, and what the op would take at those ceilings."""
    m = phase_sizes(rows)[-1]
    found = phase_rows(rows, m)
    s = found["products"]["moduli"]
    entries = {e["key"]: e for e in breakdown(rows, m, peak)}
    prod = entries["products"]
    parts = [f"the products run at {prod['rate'] / 1000:,.0f} INT8 TOPS, {_pct(prod['rate'], peak.int8_gops)} of the "
             f"INT8 peak" + (f" ({peak.int8_gops / 1000:,.0f} TOPS)" if peak.int8_gops else "") +
             f", and take {100 * prod['share']:.0f}% of the phases' time; at that rate their "
             f"{specs.RESIDUE_TILE_M} x {specs.RESIDUE_TILE_N} tiles read "
             f"{residue_reads(prod['rate']) / 1000:.1f} TB/s of residues from L2"]
    others = [entries[p.key] for p in PHASES if p.key not in (*_INT8_PHASES, *_SMALL_PHASES)]
    parts.append("the other phases move their bytes at the least at " + ", ".join(
        f"{e['rate']:,.0f} GB/s in {e['phase']}" for e in others) +
        (f", {_pct(min(e['rate'] for e in others), peak.bandwidth_gbs)} to "
         f"{_pct(max(e['rate'] for e in others), peak.bandwidth_gbs)} of the "
         f"{peak.bandwidth_gbs:,.0f} GB/s bandwidth" if peak.bandwidth_gbs else ""))
    text = f"At {m}^3 with {s} moduli on {rows[0]['device']}: " + "; ".join(parts) + "."
    bound = bound_seconds(m, found["products"]["N"], found["products"]["K"], s, peak)
    measured = [r for r in products(rows) if r["M"] == m and r["kernel"] == f"{EMULATED} moduli={s}"]
    if bound and measured:
        flops = 2 * m * found["products"]["N"] * found["products"]["K"]
        text += (f" At those ceilings the op would take {bound * 1e3:.2f} ms ({flops / bound / 1e12:.0f} TFLOP/s "
                 f"float32-equivalent); it takes {measured[0]['us'] / 1e3:.2f} ms "
                 f"({measured[0]['gflops'] / 1000:.0f} TFLOP/s).")
    return text + f" Peaks: {peak.source} (`mlx_sgemm.bench.peaks`)."


# ---- accuracy ---------------------------------------------------------------------------------------------

def _error(value: float | None) -> str:
    return f"{value:.1e}" if value is not None else "-"


def accuracy_table(rows: list[dict]) -> str:
    """Markdown: per K and kind of input, what the op chose and its errors
    next to cuBLAS SGEMM's on the same operands."""
    lines = [("| K | inputs | moduli | bits a side | computed by | normwise | cuBLAS SGEMM normwise | "
              "componentwise | cuBLAS SGEMM componentwise |"),
             "|---:|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['K']} | {r['inputs']} | {r['moduli'] if r['moduli'] is not None else '-'} | {r['bits']} | "
                     f"`{r['computed_by']}` | {_error(r['normwise'])} | {_error(r['cublas_normwise'])} | "
                     f"{_error(r['componentwise'])} | {_error(r['cublas_componentwise'])} |")
    return "\n".join(lines)


def _at_most(ours: float | None, theirs: float | None) -> bool:
    """ours <= theirs, False where either is missing or NaN."""
    return ours is not None and theirs is not None and ours <= theirs


def accuracy_summary(rows: list[dict]) -> str:
    """One paragraph counted from the table: how many products the emulation
    computed, in how many its normwise and componentwise errors are at most
    cuBLAS SGEMM's, and where the others went and why (bits a side)."""
    emulated = [r for r in rows if r["computed_by"] == EMULATED]
    normwise = sum(_at_most(r["normwise"], r["cublas_normwise"]) for r in emulated)
    componentwise = sum(_at_most(r["componentwise"], r["cublas_componentwise"]) for r in emulated)
    text = (f"The emulation computed {len(emulated)} of the {len(rows)} products. Its normwise error is at most "
            f"cuBLAS SGEMM's in {normwise} of them, its componentwise error in {componentwise}.")
    others = [r for r in rows if r["computed_by"] != EMULATED]
    if others:
        kernels = ", ".join(f"`{k}`" for k in dict.fromkeys(r["computed_by"] for r in others))
        bits = [r["bits"] for r in others if r["bits"] is not None]
        why = ""
        if bits and min(bits) > gpu.MAX_BITS:
            needed = f"{min(bits)}" if min(bits) == max(bits) else f"{min(bits)} to {max(bits)}"
            why = f": their lines needed {needed} bits a side, past the {gpu.MAX_BITS} the GPU path carries"
        text += f" The device's choice sent the other {len(others)} to {kernels}{why}."
    return text


def where(speed: Recorded, accuracy: Recorded | None) -> str:
    """Markdown: the files the chapter reads, and on what they were measured."""
    text = f"Recorded: `{speed.path.name}` ({speed.device}, {speed.date})"
    if accuracy is not None:
        text += f" and `{accuracy.path.name}` ({accuracy.device}, {accuracy.date})"
    return text + ". This chapter shows the recorded runs in either mode; `python benchmarks/int8_emulation.py` "\
                  "records new ones on a Hopper GPU."

