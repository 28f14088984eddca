"""mlx_sgemm.bench.nsight without Nsight Compute: ncu's raw CSV page read
with its units (the benchmarks that profile kernels record what it reads)."""

import pytest

from mlx_sgemm.bench import nsight

# What `ncu --csv --page raw --metrics ...` prints: the program's own lines,
# then quoted CSV, its first row after the header the units.
NCU_OUTPUT = """==PROF== Connected to process 4242
"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","sm__cycles_elapsed.avg.per_second","dram__throughput.avg.pct_of_peak_sustained_elapsed"
"","","usecond","Gbyte","cycle/nsecond","%"
"0","half_split_15_2_8192_38","1,050.20","1.05","1.95","71.30"
"1","fp16_emulated_128_192_2_8_15_2","4,220.00","3,839.4","1.52","18.90"
==PROF== Disconnected from process 4242
"""


def test_kernels_in_launch_order_with_their_metrics_in_us_mb_and_ghz():
    rows = nsight.rows(NCU_OUTPUT)
    assert [r["Kernel Name"] for r in rows] == ["half_split_15_2_8192_38", "fp16_emulated_128_192_2_8_15_2"]
    split = rows[0]
    assert nsight.number(split, "gpu__time_duration.sum") == pytest.approx(1050.2)
    assert nsight.number(split, "dram__bytes_read.sum") == pytest.approx(1050.0)  # Gbyte -> MB
    assert nsight.number(split, "sm__cycles_elapsed.avg.per_second") == pytest.approx(1.95)
    assert nsight.number(split, "dram__throughput.avg.pct_of_peak_sustained_elapsed") == pytest.approx(71.3)
    assert nsight.number(rows[1], "dram__bytes_read.sum") == pytest.approx(3_839_400.0)


def test_a_unit_it_does_not_know_is_refused_by_name():
    rows = nsight.rows(NCU_OUTPUT.replace('"usecond"', '"fortnight"'))
    with pytest.raises(ValueError, match="gpu__time_duration.sum in 'fortnight'"):
        nsight.number(rows[0], "gpu__time_duration.sum")


def test_the_command_names_the_kernels_and_metrics():
    cmd = nsight.command("gemv", ("a.sum", "b.pct"), ["script.py", "--child"])
    assert cmd[:8] == ["ncu", "--csv", "--page", "raw", "--cache-control", "all", "--clock-control", "none"]
    assert cmd[8:12] == ["-k", "regex:gemv", "--metrics", "a.sum,b.pct"] and cmd[-2:] == ["script.py", "--child"]
