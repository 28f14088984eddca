"""Chapter 8's generated figures (mlx_sgemm.pages.half_precision): the newest
shape suite's half rows against the targets, and a token's bytes of W a second,
from made-up recorded runs."""

import csv

from mlx_sgemm.bench import notebook, results
from mlx_sgemm.pages import half_precision

SUITE_COLUMNS = ["device", "mlx_version", "date", "precision", "dtype", "calls", "batch", "M", "N", "K",
                 "b_transposed_view", "matmul_s", "mx_matmul_s", "ratio", "error", "mx_matmul_error"]


def write(path, columns, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)


def suite_row(dtype, m, ratio, transposed=False):
    return dict(device="Fake H200", mlx_version="0.32.4", date="2026-11-27", precision="float32", dtype=dtype,
                calls="one at a time", batch="", M=m, N=4096, K=4096, b_transposed_view=str(transposed),
                matmul_s=1e-4, mx_matmul_s=ratio * 1e-4, ratio=ratio, error=1e-5, mx_matmul_error=1e-5)


def test_the_suite_table_counts_each_class_against_its_target(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    assert half_precision.suite_table() == half_precision.NONE_YET
    write(tmp_path / "shapes-2026-11-26-fake.csv", SUITE_COLUMNS, [suite_row("float32", 128, 2.0)])
    assert half_precision.suite_table() == half_precision.NONE_YET  # float32 rows are not chapter 8's
    write(tmp_path / "shapes-2026-11-27-fake-half.csv", SUITE_COLUMNS,
          [suite_row("bfloat16", 1, 1.2), suite_row("bfloat16", 1, 0.5, transposed=True),
           suite_row("bfloat16", 32, 0.1),  # neither class: not counted
           suite_row("bfloat16", 128, 0.95), suite_row("bfloat16", 2048, 0.85)])
    table = half_precision.suite_table()
    assert "`shapes-2026-11-27-fake-half.csv`" in table and "Fake H200, one at a time" in table
    assert "| bfloat16 | M <= 8 | 1.00x | 1/2 | 0.85x | 0.50x at 1x4096x4096 `x @ W.T` |" in table
    assert "| bfloat16 | M >= 128 | 0.90x | 1/2 | 0.90x | 0.85x at 2048x4096x4096 |" in table
    assert "| float16 |" not in table  # no rows of it
    # A suite timed as independent calls gets a table of its own, after the
    # newest one-at-a-time suite's, even where it is newer.
    write(tmp_path / "shapes-2026-11-28-fake-half.csv", SUITE_COLUMNS,
          [dict(suite_row("float16", 128, 0.8), calls="independent")])
    table = half_precision.suite_table()
    one, independent = table.split("\n\n", 2)[0], table.split("Fake H200, independent")[1]
    assert "`shapes-2026-11-27-fake-half.csv`" in one and "| bfloat16 | M >= 128 |" in table
    assert "`shapes-2026-11-28-fake-half.csv`" in independent
    assert "| float16 | M >= 128 | 0.90x | 0/1 | 0.80x | 0.80x at 128x4096x4096 |" in independent
    # The notebook shows the same table where it does not measure live.
    monkeypatch.setattr(notebook, "mode", lambda: "recorded")
    assert notebook.half_precision_table() == table


def test_the_bandwidth_table_is_a_tokens_products(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    assert "No half-precision run" in half_precision.weight_bandwidth()
    columns = ["device", "dtype", "layout", "M", "N", "K", "kernel", "chosen", "w_gbs", "w_pct_bandwidth", "mx_w_gbs"]
    base = dict(device="Fake H200", dtype="bfloat16", N=14336, K=4096, kernel="small_m_wide[4x128]/1",
                chosen="True", w_gbs="3000", w_pct_bandwidth="62.5", mx_w_gbs="3500")
    write(tmp_path / "half-precision-2026-11-27-fake.csv", columns,
          [dict(base, layout="transposed", M=1), dict(base, layout="row-major", M=1),
           dict(base, layout="transposed", M=8), dict(base, layout="transposed", M=1, chosen="False")])
    table = half_precision.weight_bandwidth()
    assert table.count("| bfloat16 |") == 1
    assert "| bfloat16 | 1x14336x4096 | `small_m_wide[4x128]/1` | 3,000 GB/s (62% of the GPU's) | 3,500 GB/s |" in table


KERNEL_TIME_COLUMNS = ["device", "mlx_version", "date", "commit", "dtype", "M", "N", "K", "kernel", "median_us",
                       "least_us", "tflops", "x_mx", "kernel_names"]


def kernel_time(m, kernel, us, x_mx, names="custom_kernel_sgemm_half_wgmma"):
    return dict(device="Fake H200", mlx_version="0.32.4", date="2026-11-28", commit="abc", dtype="bfloat16", M=m,
                N=4096, K=4096, kernel=kernel, median_us=us, least_us=us, tflops=1.0, x_mx=x_mx, kernel_names=names)


def test_the_kernel_times_table_sets_each_block_beside_cublas(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    assert "No run of the half products' kernels" in half_precision.kernel_times_table()
    write(tmp_path / "half-kernel-times-2026-11-28-fake.csv", KERNEL_TIME_COLUMNS,
          [kernel_time(512, "mx", 24.0, 1.0, "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT"),
           kernel_time(512, "ours", 32.0, 0.75), kernel_time(512, "wgmma:128x256", 48.0, 0.5),
           kernel_time(128, "mx", 13.0, 1.0, "cutlass_gemm_kernel"), kernel_time(128, "ours", 26.0, 0.5)])
    table = half_precision.kernel_times_table()
    assert "Fake H200, bfloat16 `x @ W.T`" in table and "`half-kernel-times-2026-11-28-fake.csv`" in table
    assert "| M x N x K | cuBLAS (its tile) | `matmul` | `half_wgmma` 128x256 |" in table
    assert "| 512x4096x4096 | 24.0 us (128x128, clusters of 2) | 32.0 us (0.75x) | 48.0 us (0.50x) |" in table
    assert "| 128x4096x4096 | 13.0 us | 26.0 us (0.50x) | - |" in table  # a name without a tile; a block not timed


def test_cublas_tiles_are_read_from_its_kernel_names():
    assert half_precision.cublas_tile("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT") == "256x128, clusters of 2"
    assert half_precision.cublas_tile("nvjet_sm90_tst_64x64_64x13_1x1_v_bz_TNT") == "64x64"
    assert half_precision.cublas_tile("void mlx::core::cu::gemv_single<__nv_bfloat16, 8, 4>") == ""
