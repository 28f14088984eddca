"""bench.tf32_accuracy on the CPU: a case's row (batched products' entry 0, x @
W.T as a transposed view) and its columns, which benchmarks/tf32_accuracy.py
records. On MLX's CPU backend matmul computes with mx.matmul, so both errors
are the same; the comparison with cuBLAS's TF32 is measured on the GPU
machine (tests/gpu/test_gpu_tf32_rounding.py)."""

import csv
from pathlib import Path

import pytest

from mlx_sgemm.bench import tf32_accuracy

from ..conftest import HAS_GPU

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


@pytest.mark.skipif(HAS_GPU, reason="checks the row on MLX's CPU backend, where matmul is mx.matmul "
                    "(on a GPU: tests/gpu/test_gpu_tf32_rounding.py)")
@pytest.mark.parametrize("batch, transposed", [((), False), ((), True), ((3,), False)])
@pytest.mark.parametrize("inputs", tf32_accuracy.INPUTS)
def test_a_case_s_row(batch, transposed, inputs):
    row = tf32_accuracy.error_row(batch, 17, 9, 33, transposed, inputs, seed=1)
    assert row["M"] == 17 and row["N"] == 9 and row["K"] == 33 and row["inputs"] == inputs
    assert row["b_transposed_view"] == transposed and row["batch"] == "x".join(map(str, batch))
    assert 0 < row["error"] < 1e-6 and row["error_over_cublas"] == pytest.approx(row["error"] / row["mx_matmul_error"])


def test_rows_for_each_kind_of_inputs():
    rows = tf32_accuracy.error_rows([([], 5, 6, 7, False), ([2], 3, 4, 5, True)])
    assert [(r["inputs"], r["M"]) for r in rows] == [("normal", 5), ("normal", 3), ("positive", 5), ("positive", 3)]


def test_the_recorded_run_holds_every_kernel_to_cublas_s_error():
    """The newest recorded run: every row of the pipeline and the split at or
    below cuBLAS TF32's error (to 1e-4, the digits two equal roundings differ
    by); the small-M FMA kernels are float32-accurate (MLX's GEMV of one row is
    float32 too, so there the two are float32 errors)."""
    path = sorted(RESULTS.glob("tf32-accuracy-*.csv"))[-1]
    rows = list(csv.DictReader(path.open()))
    assert {r["inputs"] for r in rows} == set(tf32_accuracy.INPUTS)
    for r in rows:
        if r["kernel"].startswith("small_m"):
            assert float(r["error"]) < 1e-6, r
        else:
            assert float(r["error_over_cublas"]) <= 1.0001, r
