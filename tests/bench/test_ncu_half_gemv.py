"""benchmarks/ncu_half_gemv.py without a GPU or Nsight Compute: its reading of
ncu's raw CSV page, and the rows it records (Nsight Compute faked), which
chapter 8's kernel table must read. Speed is not checked."""

import csv

import pytest

from mlx_sgemm.bench import results
from mlx_sgemm.dispatch import kernel_choice
from mlx_sgemm.pages import half_precision

from . import benchmark_scripts

# What `ncu --csv --page raw --metrics ...` prints: the program's own lines,
# then quoted CSV, its first row after the header the units.
NCU_OUTPUT = """==PROF== Connected to process 4242
==PROF== Profiling "gemv_single": 0%....50%....100% - 1 pass
"ID","Kernel Name","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum"
"","","%","ns"
"0","gemv_single","80.59","30,336"
"1","custom_kernel_half_gemv_2_8_2_bfloat16_bfloat16","66.41","37,568"
==PROF== Disconnected from process 4242
"""


def load():
    return benchmark_scripts.load("ncu_half_gemv")


def test_reads_times_with_thousands_separators_and_their_units():
    assert load().parse(NCU_OUTPUT) == [(pytest.approx(30.336), 80.59), (pytest.approx(37.568), 66.41)]
    in_us = NCU_OUTPUT.replace('"ns"', '"us"').replace('"30,336"', '"30.336"').replace('"37,568"', '"37.568"')
    assert load().parse(in_us) == [(pytest.approx(30.336), 80.59), (pytest.approx(37.568), 66.41)]


def test_rows_are_what_the_kernel_table_reads(fake_cuda, monkeypatch, tmp_path):
    module = load()
    monkeypatch.setattr(kernel_choice, "_multiprocessors", lambda: 132)
    variants = ["WARPS=16,MIN_BLOCKS=1", "NT=1,WARPS=4,IN_FLIGHT=1,MIN_BLOCKS=8"]

    def profile(m, n, k, transposed, dtype, names):
        # MLX's GEMV and a layer's call only for one row against W.T; matmul's launch, the variants'.
        count = 5 * (len(names) + 1 + 2 * (m == 1 and transposed))
        return [(10.0 + i // 5, 50.0) for i in range(count)]
    monkeypatch.setattr(module, "profile", profile)
    path = tmp_path / "half-gemv-kernel-2026-11-28-test.csv"
    assert module.main(["--csv", str(path), "--shapes", "1x14336x4096T", "8x4096x14336", "--variants", *variants]) == 0
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["layout"], r["kernel"], r["median_us"]) for r in rows[:6]] == [
        ("transposed", "mx.matmul (gemv)", "10.0"), ("transposed", "half_gemv", "11.0"),
        ("transposed", "half_gemv_one_row", "12.0"), ("transposed", "half_gemv", "13.0"),
        ("transposed", "half_gemv", "14.0"), ("row-major", "half_gemv", "10.0")]
    assert (rows[4]["NT"], rows[4]["WARPS"], rows[4]["IN_FLIGHT"], rows[4]["MIN_BLOCKS"]) == ("1", "4", "1", "8")
    assert (rows[2]["UNROLL"], rows[2]["PARTS"], rows[2]["MIN_BLOCKS"], rows[2]["NT"]) == ("2", "4", "8", "")
    # Chapter 8's table finds matmul's launch for each shape, a layer's for a
    # token, and MLX's GEMV where timed.
    monkeypatch.setattr(results, "recorded_runs", lambda pattern: [path])
    table = half_precision.gemv_kernel_table()
    assert "| 1x14336x4096 | `x @ W.T` | 11.0 us | 50% | 12.0 us | 50% | 10.0 us | 50% |" in table
    assert "| 8x4096x14336 | row-major | 10.0 us | 50% | - | - | - | - |" in table


def test_a_run_without_matmuls_current_blocks_says_so(monkeypatch, tmp_path):
    """A run recorded before matmul's instance for a shape changed keeps
    MLX's GEMV in the table and says that ours was not timed in its current
    blocks; a shape with neither is left out."""
    header = "device,mlx_version,date,dtype,layout,M,N,K,kernel,NT,WARPS,IN_FLIGHT,MIN_BLOCKS,median_us,dram_pct,calls\n"
    old = "GPU,0.32.4,2026-11-28,bfloat16,transposed,1,4096,4096,half_gemv,9,9,9,9,13.0,55.0,5\n"
    path = tmp_path / "half-gemv-kernel-2026-11-28-test.csv"
    path.write_text(header + "GPU,0.32.4,2026-11-28,bfloat16,transposed,1,4096,4096,mx.matmul (gemv),,,,,10.9,64.0,5\n"
                    + old + old.replace(",1,4096,4096,", ",8,4096,14336,"))
    monkeypatch.setattr(results, "recorded_runs", lambda pattern: [path])
    table = half_precision.gemv_kernel_table()
    assert "| 1x4096x4096 | `x @ W.T` | not timed in its current blocks | - | - | - | 10.9 us | 64% |" in table
    assert "8x4096x14336" not in table
