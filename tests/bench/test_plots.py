"""The benchmark's plots a reader can trust: every recorded point sits under
the ceiling of the units it ran on, every plot names what it shows, the
device and the date, and the fastest kernel stands out."""

from pathlib import Path

import pytest

from mlx_sgemm.bench import peaks, plots, results

ROOT = Path(__file__).resolve().parent.parent.parent
RECORDED = sorted((ROOT / "benchmarks" / "results").glob("bench-*.csv"))


def shown_rows() -> list[dict]:
    """The newest run's rows that the no-GPU benchmark shows by default (float32
    operands, timed one at a time where it has such rows): one row per kernel,
    precision and shape, as the plots are drawn from."""
    rows = results.read_csv(results.newest_recorded())
    calls = results.headline_calls(rows)
    return [r for r in rows if r["dtype"] == "float32" and r["calls"] == calls]


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_no_recorded_point_sits_above_the_ceiling_of_its_units(path):
    rows = results.read_csv(path)
    caps = plots.ceilings(rows)
    for row in rows:
        kind = peaks.row_units(row)
        rate = peaks.units_peak(row, peaks.lookup(row["device"]))
        assert rate is not None, f"{row['device']} has no {kind} peak"
        assert row["gflops"] <= rate, f"{row['kernel']} {row['precision']} {row['M']}: {row['gflops']:.0f} > {kind} {rate:.0f}"
        assert caps[kind] == rate  # the roofline draws that ceiling


def test_the_newest_run_draws_the_fp16_ceilings_its_split_ran_under():
    rows = results.read_csv(results.newest_recorded())
    kinds = {peaks.row_units(r) for r in rows if r["kernel"] == "matmul"}
    assert {peaks.THREE_FP16, peaks.FP16} <= kinds <= set(plots.ceilings(rows))


def test_every_plot_names_what_it_shows_the_device_and_the_date(tmp_path, monkeypatch):
    rows = shown_rows()
    figures = []
    close = plots.plt.close
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: figures.append(fig))
    try:
        plots.write_all(rows, tmp_path, True, None, peaks.lookup(rows[0]["device"]).bandwidth_gbs)
    finally:
        for fig in figures:
            close(fig)
    assert len(figures) == len(plots.FILES)
    for fig in figures:
        (ax,) = fig.axes
        assert rows[0]["device"] in ax.get_title() and rows[0]["date"] in ax.get_title()
        assert f"{rows[0]['calls']})" in ax.get_title()  # how the products were called
        assert ax.get_ylabel() and ax.get_xlabel()


def test_the_fastest_kernel_is_the_tallest_bar_and_says_so(tmp_path, monkeypatch):
    rows = [r for r in shown_rows() if r["M"] == 8192]
    top = plots.fastest(rows)
    assert top["kernel"] == "matmul"
    bars = {}
    original = plots.plt.Axes.bar

    def bar(ax, names, heights, **kw):
        bars.update(zip(names, heights))
        return original(ax, names, heights, **kw)

    monkeypatch.setattr(plots.plt.Axes, "bar", bar)
    plots.pct_peak(rows, tmp_path / "pct.png", True, None)
    assert max(bars, key=bars.get) == plots.label(top)


@pytest.mark.parametrize("device,precision,mnk,units", [
    ("NVIDIA H100 80GB HBM3", "float32", (4096, 4096, 4096), peaks.THREE_FP16),
    ("NVIDIA H100 80GB HBM3", "tf32", (4096, 4096, 4096), peaks.FP16),
    ("NVIDIA H100 80GB HBM3", "float32", (1024, 1024, 1024), peaks.THREE_TF32),
    ("NVIDIA H100 80GB HBM3", "tf32", (2048, 2048, 2048), peaks.TF32),
    ("NVIDIA H100 80GB HBM3", "float32", (1, 4096, 4096), peaks.FP32),  # small_m: FMAs
    ("NVIDIA H200", "tf32", (4, 14336, 4096), peaks.FP32),  # small_m_wide
    ("NVIDIA A100-SXM4-80GB", "float32", (4096, 4096, 4096), peaks.FP32),  # tile_threads
    ("NVIDIA A100-SXM4-80GB", "tf32", (4096, 4096, 4096), peaks.TF32),
])
def test_matmuls_units_are_those_of_the_kernel_the_rule_picks(device, precision, mnk, units):
    m, n, k = mnk
    row = dict(device=device, backend="cuda", kernel="matmul", precision=precision, M=m, N=n, K=k)
    assert peaks.units(row) == units


def test_the_plots_name_each_dtype_and_the_way_of_calling(tmp_path, monkeypatch):
    """A run of float32 and bfloat16 operands timed one at a time: a line per
    kernel and dtype, mx.matmul's on each dtype drawn its own way, the way of
    calling in every title."""
    rows = [dict(r, calls="one at a time") for r in shown_rows()
            if r["precision"] == "float32" and r["kernel"] in ("mx.matmul", "matmul")]
    rows += [dict(r, dtype="bfloat16", peak_kind="BF16" if r["kernel"] == "mx.matmul" else r["peak_kind"])
             for r in rows]
    figures = []
    close = plots.plt.close
    monkeypatch.setattr(plots.plt, "close", lambda fig=None: figures.append(fig))
    try:
        plots.write_all(rows, tmp_path, True, None, None)
        (ax,) = figures[0].axes
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert set(lines) == {"mx.matmul", "matmul", "mx.matmul (bfloat16)", "matmul (bfloat16)"}
        assert lines["mx.matmul"].get_linestyle() != lines["mx.matmul (bfloat16)"].get_linestyle()
        assert "float32 / bfloat16 operands" in ax.get_ylabel()
        assert all("one at a time)" in fig.axes[0].get_title() for fig in figures)
        assert "BF16" in plots.ceilings(rows)
    finally:
        for fig in figures:
            close(fig)
