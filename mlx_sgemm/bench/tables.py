"""The M2 SGEMM journey repository's table, per problem size, from measurement rows (live or recorded)."""

from __future__ import annotations

from collections import defaultdict


def label(row: dict) -> str:
    """A kernel's name in tables and legends: precision shown where it is not float32."""
    return row["kernel"] if row["precision"] == "float32" else f"{row['kernel']} ({row['precision']})"


def by_shape(rows: list[dict]) -> dict[tuple[int, int, int], list[dict]]:
    groups = defaultdict(list)
    for row in rows:
        groups[(row["M"], row["N"], row["K"])].append(row)
    return dict(sorted(groups.items(), key=lambda kv: kv[0][0] * kv[0][1] * kv[0][2]))


def table(rows: list[dict]) -> str:
    """One markdown table: kernel | GFLOP/s | % of peak | x mx.matmul | error."""
    lines = [
        "| kernel | GFLOP/s | % of FP32 peak | x mx.matmul (same precision) | rel. error vs float64 |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        pct = f"{r['pct_peak']:.1f}%" if r["pct_peak"] is not None else "peak unknown"
        ratio = f"{r['x_matmul']:.2f}" if r["x_matmul"] is not None else "-"
        err = f"{r['error']:.1e}" if r["error"] is not None else "-"
        lines.append(f"| `{label(r)}` | {r['gflops']:,.0f} | {pct} | {ratio} | {err} |")
    return "\n".join(lines)


def tables(rows: list[dict]) -> str:
    """A heading and a table per problem size, mx.matmul first."""
    out = []
    for (m, n, k), group in by_shape(rows).items():
        group = sorted(group, key=lambda r: (not r["kernel"].startswith("mx."), r["precision"]))
        out.append(f"\n{m}x{n}x{k} ({group[0]['device']}, MLX {group[0]['mlx_version']}, {group[0]['date']})")
        out.append(table(group))
    return "\n".join(out)
