"""bench.emulation_results: the INT8 emulation's recorded runs as the notebook's
chapter reads them (the files, the units' peaks, each phase's bytes and rate,
the bound at the ceilings, the accuracy counts)."""

import math

import pytest

from mlx_sgemm.bench import emulation_results as er
from mlx_sgemm.bench import peaks, plots
from mlx_sgemm.emulation import gpu

H100 = "NVIDIA H100 80GB HBM3"
# Round numbers, so that every rate below can be worked out by hand.
PEAK = peaks.DevicePeak(fp32_gflops=50_000, bandwidth_gbs=1_000, source="test", tf32_gflops=300_000,
                        int8_gops=2_000_000)


def row(kernel, m=256, us=100.0, moduli=2, gflops=1.0, ratio=None, error=None, device=H100):
    return {"device": device, "kernel": kernel, "precision": "float32", "M": m, "N": m, "K": m, "moduli": moduli,
            "us": us, "gflops": gflops, "x_cublas_sgemm": ratio, "error": error, "note": None}


def run(m=256, s=2, drop=()):
    """A run at one size: the three kinds of product and every phase, 100 µs each but the products' 400."""
    rows = [row("mx.matmul", m, moduli=None, gflops=40_000, ratio=1.0, error=3e-8),
            row("matmul", m, moduli=None, gflops=80_000, ratio=2.0, error=7e-9),
            row(f"int8_emulated moduli={s}", m, moduli=s, gflops=120_000, ratio=3.0, error=1e-8),
            row("int8_emulated (device's choice)", m, moduli=s, gflops=60_000, ratio=1.5, error=1e-8)]
    names = ["phase: line statistics (A and B^T)", "phase: choice (on the device)",
             "phase: residues of A", "phase: residues of B (read as B^T)", "phase: products (wgmma, mod p)",
             "phase: fallback tiles (none here)", "phase: reconstruct (CRT)",
             "all phases, without the op's Python (gpu.emulated)", "assess (the choice read back: a synchronization)"]
    for name in names:
        if not any(name.startswith(d) for d in drop):
            rows.append(row(name, m, us=400.0 if "products" in name else 100.0, moduli=s))
    return rows


@pytest.fixture(scope="module")
def recorded():
    speed, accuracy = er.recorded_speed(), er.recorded_accuracy()
    assert speed is not None and accuracy is not None, "benchmarks/results holds the INT8 emulation's runs"
    return speed, accuracy


def test_the_recorded_runs_are_read_with_their_types(recorded):
    speed, accuracy = recorded
    assert speed.path.name.startswith("int8-emulation-2") and speed.date in speed.path.name
    baseline = [r for r in speed.rows if r["kernel"] == "mx.matmul"]
    assert baseline and all(r["x_cublas_sgemm"] == 1.0 and r["moduli"] is None for r in baseline)
    assert all(isinstance(r["M"], int) and r["us"] > 0 for r in speed.rows)
    assert {r["computed_by"] for r in accuracy.rows} >= {"int8_emulated"}
    assert all(isinstance(r["normwise"], float) for r in accuracy.rows)


def test_the_newest_of_each_kind_is_taken_and_neither_glob_takes_the_other(tmp_path, recorded):
    speed, accuracy = recorded
    header = ",".join(er.SPEED_COLUMNS) + "\n"
    line = ",".join(str(speed.rows[0][c] if speed.rows[0][c] is not None else "") for c in er.SPEED_COLUMNS)
    for name in ("int8-emulation-2026-01-01-h100.csv", "int8-emulation-2026-02-01-h200.csv"):
        (tmp_path / name).write_text(header + line + "\n")
    (tmp_path / "int8-emulation-accuracy-2026-12-31-h100.csv").write_text(accuracy.path.read_text())
    assert er.recorded_speed([tmp_path]).path.name == "int8-emulation-2026-02-01-h200.csv"
    assert er.recorded_speed([tmp_path]).date == "2026-02-01"
    assert er.recorded_accuracy([tmp_path]).path.name == "int8-emulation-accuracy-2026-12-31-h100.csv"
    assert er.recorded_speed([tmp_path / "none"]) is None


def test_a_file_with_other_columns_or_no_rows_is_refused(tmp_path):
    (tmp_path / "other.csv").write_text("device,kernel\nx,y\n")
    with pytest.raises(ValueError, match="columns"):
        er.read_speed(tmp_path / "other.csv")
    (tmp_path / "empty.csv").write_text(",".join(er.ACCURACY_COLUMNS) + "\n")
    with pytest.raises(ValueError, match="no rows"):
        er.read_accuracy(tmp_path / "empty.csv")


@pytest.mark.parametrize("kernel,moduli,kind,peak", [
    ("mx.matmul", None, "FP32", 50_000), ("matmul", None, "3xTF32", 100_000),
    ("int8_emulated moduli=8", 8, "INT8 / 8", 250_000), ("int8_emulated (device's choice)", 5, "INT8 / 5", 400_000),
])
def test_each_product_is_held_against_its_units_peak(kernel, moduli, kind, peak):
    r = row(kernel, moduli=moduli)
    assert er.is_product(r) and er.units(r) == kind
    assert er.units_peak(r, PEAK) == pytest.approx(peak)
    assert er.units_peak(r, peaks.DevicePeak(None, None, "unknown")) is None


def test_a_phase_is_not_a_product():
    r = row("phase: residues of A")
    assert not er.is_product(r)
    with pytest.raises(ValueError, match="not a product"):
        er.units(r)


def test_the_speed_table_has_a_line_per_product():
    lines = er.speed_table(run(), PEAK).splitlines()
    assert len(lines) == 2 + 4 and "| x mx.matmul |" in lines[0]
    assert lines[4] == "| 256 | `int8_emulated moduli=2` | 120.0 | 3.00x | 12% INT8 / 2 | 1.0e-08 |"
    assert "`int8_emulated (device's choice: 2 moduli)`" in lines[5]


def test_traffic_by_hand():
    # 256^3, 2 moduli: nothing padded.
    assert er.traffic("statistics", 256, 256, 256, 2) == 4 * 2 * 256**2
    assert er.traffic("residues_a", 256, 256, 256, 2) == 4 * 256**2 + 2 * 256**2
    assert er.traffic("products", 256, 256, 256, 2) == 2 * 2 * 256**2 + 2 * 256**2
    assert er.traffic("mma_sync", 256, 256, 256, 2) == 2 * 2 * 256**2 + 4 * 2 * 256**2
    assert er.traffic("reconstruct", 256, 256, 256, 2) == 2 * 256**2 + 4 * 256**2
    # 100 x 300 x 130, 3 moduli: A's rows padded to 128, B's columns to 512, K to 256.
    assert er.traffic("residues_a", 100, 300, 130, 3) == 4 * 100 * 130 + 3 * 128 * 256
    assert er.traffic("residues_b", 100, 300, 130, 3) == 4 * 130 * 300 + 3 * 512 * 256
    assert er.traffic("reconstruct", 100, 300, 130, 3) == 3 * 100 * 512 + 4 * 100 * 300
    with pytest.raises(ValueError):
        er.traffic("assess", 256, 256, 256, 2)


def test_each_phase_s_rate_and_share():
    entries = {e["key"]: e for e in er.breakdown(run(), 256, PEAK)}
    assert sum(entries[p.key]["share"] for p in er.PHASES) == pytest.approx(1.0)
    assert entries["products"]["share"] == pytest.approx(400 / 1000)
    # Bytes over 100 µs in GB/s; the products' INT8 operations over 400 µs in GOPS.
    assert entries["residues_a"]["rate"] == pytest.approx((4 + 2) * 256**2 / 100e-6 / 1e9)
    assert entries["products"]["rate"] == pytest.approx(gpu.int8_ops(256, 256, 256, 2) / 400e-6 / 1e9)
    assert entries["products"]["ceiling"] == PEAK.int8_gops and entries["reconstruct"]["ceiling"] == 1_000
    assert entries["assess"]["share"] is None and entries["chain"]["rate"] is None
    # The choice and the fallback's empty blocks move next to nothing: no rate.
    assert entries["choice"]["rate"] is None and entries["fallback"]["share"] == pytest.approx(0.1)
    assert "mma_sync" not in entries  # not timed in this run


def test_a_missing_phase_is_an_error_not_a_gap():
    with pytest.raises(LookupError, match="reconstruct"):
        er.phase_table(run(drop=("phase: reconstruct",)), PEAK)


def test_the_products_rate_is_the_benchmark_s_count(recorded):
    """The rate worked out here from the time is the run's own INT8 GOPS column."""
    speed, _ = recorded
    for m in er.phase_sizes(speed.rows):
        product = er.phase_rows(speed.rows, m)["products"]
        entry = next(e for e in er.breakdown(speed.rows, m, peaks.lookup(speed.device)) if e["key"] == "products")
        assert entry["rate"] == pytest.approx(product["gflops"], rel=1e-3)


def test_the_bound_at_the_ceilings_by_hand():
    m, s = 256, 2
    moved = sum(er.traffic(k, m, m, m, s) for k in ("statistics", "residues_a", "residues_b", "reconstruct"))
    expected = gpu.int8_ops(m, m, m, s) / 2e15 + moved / 1e12
    assert er.bound_seconds(m, m, m, s, PEAK) == pytest.approx(expected)
    assert er.bound_seconds(m, m, m, s, peaks.DevicePeak(1.0, 1.0, "no INT8 peak")) is None


def test_the_products_residue_reads_by_hand():
    # A 128 x 256 tile: 384 bytes of residues per 2 * 128 * 256 INT8 operations.
    assert er.residue_reads(2 * 128 * 256) == pytest.approx(384)
    assert er.residue_reads(1_335_000) == pytest.approx(7_822, rel=1e-3)


def test_the_ceiling_text_names_the_products_share_and_the_bound():
    text = er.ceiling_text(run(), PEAK)
    products = gpu.int8_ops(256, 256, 256, 2) / 400e-6 / 1e9
    assert text.startswith(f"At 256^3 with 2 moduli on {H100}")
    assert f"{100 * products / PEAK.int8_gops:.0f}% of the INT8 peak" in text and "take 40% of the phases' time" in text
    assert f"At those ceilings the op would take {er.bound_seconds(256, 256, 256, 2, PEAK) * 1e3:.2f} ms" in text
    assert "it takes 0.10 ms" in text
    assert f"read {er.residue_reads(products) / 1000:.1f} TB/s of residues from L2" in text


def test_the_figure_s_bars_are_the_phases_in_order():
    (name, bar), = er.phase_bars(run()).items()
    assert name == "256^3, 2 moduli"
    assert [us for _, us in bar] == [100, 100, 100, 100, 400, 100, 100]
    assert bar[1][0].startswith("choice") and bar[5][0].startswith("fallback tiles")


def test_the_figure_is_written(tmp_path, recorded):
    speed, _ = recorded
    peak = peaks.lookup(speed.device)
    path = tmp_path / "int8.png"
    plots.emulation(er.speed_series(speed.rows, peak), er.phase_bars(speed.rows), path, "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def accuracy_row(computed_by, normwise, componentwise, bits=27, moduli=7):
    return {"device": H100, "K": 31, "inputs": "normal", "moduli": moduli, "bits": bits, "computed_by": computed_by,
            "normwise": normwise, "cublas_normwise": 2e-8, "componentwise": componentwise,
            "cublas_componentwise": 2e-7}


def test_the_accuracy_counts_and_nan_never_passes():
    rows = [accuracy_row("int8_emulated", 1e-9, 1e-7), accuracy_row("int8_emulated", 1e-9, 1e-4),
            accuracy_row("int8_emulated", math.nan, 1e-7), accuracy_row("tile_threads", 3e-8, 3e-7, bits=60, moduli=None)]
    text = er.accuracy_summary(rows)
    assert text.startswith("The emulation computed 3 of the 4 products.")
    assert "at most cuBLAS SGEMM's in 2 of them, its componentwise error in 2." in text
    assert f"the other 1 to `tile_threads`: their lines needed 60 bits a side, past the {gpu.MAX_BITS}" in text
    wider = [*rows, accuracy_row("tile_threads", 3e-8, 3e-7, bits=120, moduli=None)]
    assert "the other 2 to `tile_threads`: their lines needed 60 to 120 bits a side" in er.accuracy_summary(wider)
    table = er.accuracy_table(rows).splitlines()
    assert len(table) == 2 + 4 and table[-1].startswith("| 31 | normal | - | 60 | `tile_threads` | 3.0e-08 |")
