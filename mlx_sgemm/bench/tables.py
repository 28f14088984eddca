"""The M2 SGEMM journey repository's table, per problem size, from measurement rows (live or recorded)."""

from __future__ import annotations

from collections import defaultdict

from . import timing
from .measure import DTYPES


def dtype(row: dict) -> str:
    """The row's operand dtype; float32 for rows without one (other benchmarks' rows)."""
    return row.get("dtype") or "float32"


def label(row: dict) -> str:
    """A kernel's name in tables and legends: the operands' dtype and the
    precision shown where they are not float32."""
    shown = [x for x in (dtype(row), row["precision"]) if x != "float32"]
    return row["kernel"] + (f" ({', '.join(shown)})" if shown else "")


def by_shape(rows: list[dict]) -> dict[tuple[int, int, int], list[dict]]:
    groups = defaultdict(list)
    for row in rows:
        groups[(row["M"], row["N"], row["K"])].append(row)
    return dict(sorted(groups.items(), key=lambda kv: kv[0][0] * kv[0][1] * kv[0][2]))


def table(rows: list[dict]) -> str:
    """One markdown table: kernel | GFLOP/s | spread | % of its units' peak | x mx.matmul | error."""
    lines = [
        "| kernel | GFLOP/s | spread | % of its units' peak | x mx.matmul (same precision and dtype) "
        "| rel. error vs float64 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        pct = "peak unknown"
        if r["pct_peak"] is not None:
            pct = f"{r['pct_peak']:.1f}%" + (f" ({r['peak_kind']})" if r.get("peak_kind") else "")
        spread = f"±{50 * r['spread']:.1f}%" if r.get("spread") is not None else "-"
        ratio = f"{r['x_matmul']:.2f}" if r["x_matmul"] is not None else "-"
        err = f"{r['error']:.1e}" if r["error"] is not None else "-"
        lines.append(f"| `{label(r)}` | {r['gflops']:,.0f} | {spread} | {pct} | {ratio} | {err} |")
    return "\n".join(lines)


FOOTNOTE = (
    "% of its units' peak: of the FP32 (FFMA) rate, the TF32 tensor-core rate, or a third of it for "
    "3xTF32 (three TF32 products per float32 product); where matmul runs the float16 split, of the "
    "FP16 tensor-core rate, or a third of it for 3xFP16; mx.matmul on float16 or bfloat16 operands, "
    "and matmul on a pair of one half type (half_wgmma on Hopper, half_mma on other CUDA GPUs, half_gemv "
    "for up to 8 rows), of the FP16 / BF16 rate (our other kernels compute halves in float32). Spread: half "
    "the range of the 3 rounds' medians, as a share of the median; a ratio within the spreads is noise. Error on half "
    "operands: against float64 of their values, dominated by the output's rounding to their dtype "
    "(mx.matmul's beside it)."
)


def tables(rows: list[dict]) -> str:
    """A heading and a table per problem size and way of calling, each dtype's
    mx.matmul first."""
    out = []
    for (m, n, k), group in by_shape(rows).items():
        for calls in dict.fromkeys(r.get("calls") for r in group):
            mine = sorted((r for r in group if r.get("calls") == calls), key=lambda r: (
                DTYPES.index(dtype(r)), not r["kernel"].startswith("mx."), r["precision"]))
            how = f"; timed {timing.TIMED[calls]}" if calls in timing.TIMED else ""
            out.append(f"\n{m}x{n}x{k} ({mine[0]['device']}, MLX {mine[0]['mlx_version']}, {mine[0]['date']}{how})")
            out.append(table(mine))
    out.append("\n" + FOOTNOTE)
    return "\n".join(out)
