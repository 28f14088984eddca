"""The benchmark's three plots, as PNG files (matplotlib, no display needed).

* ``gflops_vs_size.png``: GFLOP/s against square problem size, a line per
  kernel, with ``mx.matmul`` dashed;
* ``pct_peak.png``: each kernel's TFLOP/s at the largest size as a bar (the
  tallest is the fastest, and says so), a cap at the peak of its units (FP32,
  TF32, a third of TF32 for 3xTF32, dense FP16, a third of it for the float16
  split's three products: :mod:`mlx_sgemm.bench.peaks`) and the % of it;
* ``roofline.png``: GFLOP/s against arithmetic intensity (FLOP per byte of the
  minimum traffic: A and B read once, C written once) under the device's
  bandwidth and the compute ceiling of each kind of unit the rows ran on
  (:func:`ceilings`), each kernel drawn in its units' colour; the legend sits
  beside the axes, where it covers no point.

Every plot's title names what it shows, the device, MLX, the run's date and
how its products were called (one at a time or independent). A kernel's
label names its operands' dtype where they are not float32 (:func:`label`).

The notebook draws three more: :func:`chapter` (one stage of the journey next
to ``mx.matmul`` under its ceilings), :func:`emulation` (the INT8 emulation's
speed and the share of each of its phases) and :func:`errors` (each precision
mode's error against float64, a panel per kind of input).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt  # noqa: E402

from . import peaks  # noqa: E402
from .tables import dtype, label  # noqa: E402

matplotlib.use("Agg")

FILES = ("gflops_vs_size.png", "pct_peak.png", "roofline.png")


def size(row) -> float:
    """(M N K)^(1/3): the side of the cube with the same work (M for square runs)."""
    return (row["M"] * row["N"] * row["K"]) ** (1 / 3)


def _square(rows):
    """The square products' rows (all rows if there are none)."""
    return [r for r in rows if r["M"] == r["N"] == r["K"]] or rows


def intensity(row) -> float:
    m, n, k = row["M"], row["N"], row["K"]
    return 2 * m * n * k / (4 * (m * k + k * n + m * n))


def _series(rows):
    series = {}
    for row in sorted(rows, key=size):
        series.setdefault(label(row), []).append(row)
    return series


# mx.matmul's line on each operand dtype (its precision picks the colour).
_BASELINE_LINES = {"float32": "--", "float16": ":", "bfloat16": "-."}


def _style(name: str) -> dict:
    if name.startswith("mx.matmul"):
        half = next((d for d in _BASELINE_LINES if f"({d}" in name), "float32")
        return dict(color="black" if "tf32" not in name else "gray", linestyle=_BASELINE_LINES[half], linewidth=2)
    return dict(marker="o", markersize=4)


def _title(ax, rows, what: str, recorded: bool):
    first = rows[0]
    tag = "recorded run" if recorded else "live run"
    calls = " / ".join(dict.fromkeys(r["calls"] for r in rows if r.get("calls")))
    ax.set_title(f"{what}\n{first['device']} · MLX {first['mlx_version']} · {first['date']} ({tag}"
                 + (f", {calls}" if calls else "") + ")", fontsize=10)


def _operands(rows) -> str:
    """The rows' operand dtypes, for an axis label."""
    return " / ".join(dict.fromkeys(dtype(r) for r in rows))


def gflops_vs_size(rows, path: Path, recorded: bool):
    # One line per kernel over the square sizes; other shapes would make the
    # lines zig-zag (they are in the tables and the roofline).
    square = _square(rows)
    fig, ax = plt.subplots(figsize=(8, 5))
    ours = 0
    for name, series in _series(square).items():
        style = _style(name)
        if not name.startswith("mx."):  # not the baselines' black and grey
            style["color"] = _COLORS[ours % len(_COLORS)]
            ours += 1
        ax.plot([size(r) for r in series], [r["gflops"] for r in series], label=name, **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("problem size M = N = K")
    ax.set_ylabel(f"GFLOP/s ({_operands(square)} operands)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    _title(ax, rows, "Throughput by problem size", recorded)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def ceilings(rows, peak_gflops: float | None = None) -> dict[str, float]:
    """{kind of units: its peak GFLOP/s} for every kind the rows ran on whose
    peak is known (``peak_gflops`` overrides the FP32 rate), lowest first."""
    found = peaks.lookup(rows[0]["device"])
    if peak_gflops:
        found = peaks.DevicePeak(peak_gflops, found.bandwidth_gbs, found.source, found.tf32_gflops,
                                 found.int8_gops, found.fp16_gflops)
    rates = {}
    for row in rows:
        rate = peaks.units_peak(row, found)
        if rate:
            rates[peaks.row_units(row)] = rate
    return dict(sorted(rates.items(), key=lambda kv: kv[1]))


# A colour per kind of units, shared by its ceiling and the points that ran on it.
_UNIT_COLORS = {peaks.FP32: "tab:red", peaks.THREE_TF32: "tab:purple", peaks.TF32: "tab:brown",
                peaks.THREE_FP16: "tab:green", peaks.FP16: "tab:olive", peaks.BF16: "tab:cyan"}


def _unit_color(kind: str) -> str:
    return _UNIT_COLORS.get(kind, "tab:gray")


def fastest(rows) -> dict:
    """The fastest row (by GFLOP/s) of ``rows``."""
    return max(rows, key=lambda r: r["gflops"])


def pct_peak(rows, path: Path, recorded: bool, peak_gflops: float | None):
    square = _square(rows)
    largest = max(size(r) for r in square)
    at_largest = [r for r in square if size(r) == largest]
    caps = ceilings(at_largest, peak_gflops)
    fig, ax = plt.subplots(figsize=(9, 5))
    names = [label(r) for r in at_largest]
    top = fastest(at_largest)
    colors = ["gray" if n.startswith("mx.") else _unit_color(peaks.row_units(r)) for n, r in zip(names, at_largest)]
    bars = ax.bar(names, [r["gflops"] / 1000 for r in at_largest], color=colors,
                  edgecolor=["black" if r is top else "none" for r in at_largest], linewidth=2)
    for x, row in enumerate(at_largest):
        cap = caps.get(peaks.row_units(row))
        if cap:
            ax.plot([x - 0.4, x + 0.4], [cap / 1000] * 2, color=_unit_color(peaks.row_units(row)), linestyle=":",
                    linewidth=1.5)
    ax.bar_label(bars, fontsize=7, labels=[
        f"{r['gflops'] / 1000:.1f}" + (f"\n{r['pct_peak']:.0f}% of {peaks.row_units(r)}" if r["pct_peak"] is not None
                                       else "\npeak unknown") + ("\nfastest" if r is top else "")
        for r in at_largest])
    ax.set_ylabel("TFLOP/s; dotted: the peak of its units (FP32, TF32, TF32 / 3 for 3xTF32,\n"
                  "FP16, FP16 / 3 for the float16 split's 3xFP16, BF16)", fontsize=8)
    ax.set_yscale("log")
    ax.tick_params(axis="x", rotation=30, labelsize=8)
    ax.set_xlabel(f"kernel, at {int(round(largest))}^3")
    _title(ax, rows, "Speed at the largest size, against each kernel's units' peak", recorded)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def roofline(rows, path: Path, recorded: bool, peak_gflops: float | None, bandwidth_gbs: float | None):
    fig, ax = plt.subplots(figsize=(10, 5))
    xs = [intensity(r) for r in rows]
    lo, hi = min(xs) / 2, max(xs) * 2
    caps = ceilings(rows, peak_gflops)
    if bandwidth_gbs:
        top = max(caps.values(), default=bandwidth_gbs * hi)
        lo = min(lo, top / bandwidth_gbs / 8)
        ax.plot([lo, top / bandwidth_gbs], [bandwidth_gbs * lo, top], color="orange",
                label=f"memory ceiling ({bandwidth_gbs / 1000:.1f} TB/s)")
    for name, rate in caps.items():
        start = rate / bandwidth_gbs if bandwidth_gbs else lo
        ax.plot([start, hi], [rate, rate], color=_unit_color(name), linewidth=1)
        ax.text(hi, rate, f" {name} {rate / 1000:.0f} TFLOP/s", color=_unit_color(name), fontsize=7, va="center")
    for name, series in _series(rows).items():
        for kind in dict.fromkeys(peaks.row_units(r) for r in series):
            mine = [r for r in series if peaks.row_units(r) == kind]
            baseline = name.startswith("mx.")
            ax.plot([intensity(r) for r in mine], [r["gflops"] for r in mine], linestyle="",
                    marker="s" if baseline else _MARKERS[list(_series(rows)).index(name) % len(_MARKERS)],
                    markersize=5, color=_style(name)["color"] if baseline else _unit_color(kind),
                    markerfacecolor="none" if baseline else _unit_color(kind), label=f"{name} ({kind})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte, A and B read once, C written once)")
    ax.set_ylabel("GFLOP/s (a point's colour: the units it ran on, as its ceiling's)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.18, 1.0), borderaxespad=0)
    _title(ax, rows, "Roofline: each kernel under the ceiling of its units", recorded)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def chapter(rows, kernels, path: Path, recorded: bool, ceilings=(), earlier=()):
    """GFLOP/s by square size of ``kernels`` (solid), ``mx.matmul`` at their
    precisions (dashed), the ``earlier`` chapter's kernels (thin, grey, for
    where the journey came from), and ``ceilings``, (label, GFLOP/s) pairs, as
    horizontal lines."""
    from .measure import BASELINE

    mine = [r for r in _square(rows) if r["kernel"] in kernels]
    precisions = {r["precision"] for r in mine}
    baseline = [r for r in _square(rows) if r["kernel"] == BASELINE and r["precision"] in precisions]
    before = [r for r in _square(rows) if r["kernel"] in earlier and r["precision"] == "float32"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, series in _series(before).items():
        ax.plot([size(r) for r in series], [r["gflops"] for r in series], color="lightgray", linewidth=1.5,
                marker=".", label=f"{name} (previous chapter)")
    for name, series in {**_series(baseline), **_series(mine)}.items():
        ax.plot([size(r) for r in series], [r["gflops"] for r in series], label=name, **_style(name))
    for (name, rate), color in zip(ceilings, ("red", "purple", "brown", "orange")):
        ax.axhline(rate, color=color, linewidth=1.2, linestyle=":", label=f"ceiling: {name}, {rate / 1000:.1f} TFLOP/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("problem size M = N = K")
    ax.set_ylabel("GFLOP/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    _title(ax, rows, " and ".join(kernels) + " next to mx.matmul", recorded)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


_MARKERS = "osD^v<>px*h"
# matplotlib's tab10 without its grey, which mx.matmul's TF32 line has.
_COLORS = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7]


def errors(rows, path: Path, recorded: bool, inputs=("normal", "wide-range")):
    """Error against float64 by square size, a line per kernel and precision,
    one panel per kind of ``inputs`` the rows have (rows carry an "inputs" key)."""
    kinds = [k for k in inputs if any(r["inputs"] == k for r in rows)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 4.5), sharey=True, squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        ours = 0
        for name, series in _series(_square([r for r in rows if r["inputs"] == kind])).items():
            style = _style(name)
            if not name.startswith("mx."):
                # Lines that coincide (the FMA stages round alike) stay told apart by marker.
                style.update(marker=_MARKERS[ours % len(_MARKERS)], markersize=5, color=_COLORS[ours % len(_COLORS)])
                ours += 1
            ax.plot([size(r) for r in series], [r["error"] for r in series], label=name, alpha=0.85, **style)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("problem size M = N = K")
        ax.grid(True, which="both", alpha=0.3)
        _title(ax, [r for r in rows if r["inputs"] == kind], f"{kind} inputs", recorded)
    axes[0][0].set_ylabel("||C - C64|| / || |A| |B| ||")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def write_all(rows, directory: Path, recorded: bool, peak_gflops=None, bandwidth_gbs=None) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f for f in FILES]
    gflops_vs_size(rows, paths[0], recorded)
    pct_peak(rows, paths[1], recorded, peak_gflops)
    roofline(rows, paths[2], recorded, peak_gflops, bandwidth_gbs)
    return paths


def emulation(speeds, phases, path: Path, title: str):
    """The INT8 emulation's figure, two panels. Left: per shape, a bar per
    product at its float32-equivalent TFLOP/s (2MNK / time), its ratio to
    cuBLAS SGEMM above it and its units' peak as a dotted cap across it
    (``speeds``: shape -> [(label, GFLOP/s, units' peak GFLOP/s or None,
    ratio or None)]). Right: a bar per entry of ``phases`` (name -> [(phase,
    µs)]), each phase's share of that bar's time, the total at its end."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.2), gridspec_kw={"width_ratios": [1.1, 1]},
                                      layout="constrained")
    labels = list(dict.fromkeys(name for bars in speeds.values() for name, *_ in bars))
    ours = [name for name in labels if not name.startswith("mx.")]
    colors = {name: "dimgray" if name not in ours else _COLORS[ours.index(name) % len(_COLORS)] for name in labels}
    width = 0.8 / len(labels)
    capped = False
    for g, bars in enumerate(speeds.values()):
        for name, gflops, ceiling, ratio in bars:
            x = g - 0.4 + width * (labels.index(name) + 0.5)
            left.bar(x, gflops / 1000, width, color=colors[name], label=name if g == 0 else None)
            if ratio is not None:
                left.text(x, gflops / 1000, f"{ratio:.2f}x", ha="center", va="bottom", fontsize=6.5)
            if ceiling:
                left.plot([x - width / 2, x + width / 2], [ceiling / 1000] * 2, color="black", linestyle=":",
                          linewidth=1.2, label=None if capped else "its units' peak (FP32, 3xTF32, INT8 / s)")
                capped = True
    left.set_xticks(range(len(speeds)), list(speeds))
    left.set_ylabel("TFLOP/s (2MNK / time, float32 operands)")
    left.set_title("Speed; above each bar: x cuBLAS SGEMM (mx.matmul)", fontsize=9)
    left.grid(True, axis="y", alpha=0.3)
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3)

    names = list(dict.fromkeys(phase for segments in phases.values() for phase, _ in segments))
    palette = plt.get_cmap("Set2").colors  # not the speeds' colors: phases are not kernels
    for y, (bar, segments) in enumerate(phases.items()):
        total = sum(us for _, us in segments)
        start = 0.0
        for phase, us in segments:
            share = 100 * us / total
            right.barh(y, share, left=start, color=palette[names.index(phase) % len(palette)], label=phase,
                       edgecolor="white", linewidth=0.5)
            if share >= 6:
                right.text(start + share / 2, y, f"{share:.0f}%", ha="center", va="center", fontsize=7)
            start += share
        right.text(101, y, f"{total / 1000:.2f} ms", va="center", fontsize=8)
    handles, found = right.get_legend_handles_labels()
    unique = dict(zip(found, handles))  # one entry per phase, not per bar
    right.legend(list(unique.values()), list(unique), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12),
                 ncol=3)
    right.set_yticks(range(len(phases)), list(phases))
    right.invert_yaxis()
    right.set_xlim(0, 115)
    right.set_xlabel("share of the phases' time (%)")
    right.set_title("Where the time goes, phase by phase", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
