"""precision_modes: each precision mode's error against float64, on normal and
wide-range inputs; the wide-range operands and the reference worked out once.
On MLX's CPU backend the ops compute with mx.matmul, so these tests check the
rows and the plumbing (the child process with TF32 on included), not a GPU's
rounding: tests/gpu/test_gpu_notebook.py measures there."""

import math

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.bench import accuracy, measure, precision_modes, results

from ..conftest import HAS_GPU


def test_wide_range_operands_span_many_binades_and_repeat_by_seed():
    a, b = accuracy.wide_range_operands((64, 256), (256, 32), seed=3)
    assert a.dtype == mx.float32 and a.shape == (64, 256) and b.shape == (256, 32)
    magnitudes = np.log2(np.abs(np.array(a))[np.array(a) != 0])
    assert magnitudes.max() - magnitudes.min() > 30  # normal operands span ~15 binades
    normal = np.log2(np.abs(np.array(accuracy.random_operands((64, 256), (256, 32), seed=3)[0])))
    assert normal.max() - normal.min() < 20
    again, _ = accuracy.wide_range_operands((64, 256), (256, 32), seed=3)
    assert np.array_equal(np.array(a), np.array(again))


def test_the_reference_serves_many_results_as_relative_error_does():
    a, b = accuracy.random_operands((20, 30), (30, 10), seed=1)
    exact = accuracy.Reference(a, b)
    c = np.array(a) @ np.array(b)
    assert exact.error(c) == accuracy.relative_error(c, a, b)
    assert exact.error(c + 1e-3) > 1e-5
    c[3, 4] = np.nan
    assert exact.error(c) == math.inf
    with pytest.raises(ValueError, match="shape"):
        exact.error(c[:5])


@pytest.mark.skipif(HAS_GPU, reason="checks the rows on MLX's CPU backend, where every op is mx.matmul")
def test_errors_has_a_row_per_input_size_and_kernel():
    rows = precision_modes.errors("float32", [8, 16])
    expected = {(kind, n, k) for kind in precision_modes.INPUTS for n in (8, 16)
                for k in (measure.BASELINE, *measure.KERNELS)}
    assert {(r["inputs"], r["M"], r["kernel"]) for r in rows} == expected
    assert all(r["precision"] == "float32" and r["backend"] == "cpu-fallback" for r in rows)
    assert all(0 <= r["error"] < 1e-6 for r in rows)
    tf32 = precision_modes.errors("tf32", [8], ["normal"])
    assert {r["kernel"] for r in tf32} == {measure.BASELINE, "matmul"}  # the stage ops take no precision


def test_operands_of_an_unknown_kind_are_refused():
    with pytest.raises(ValueError, match="inputs must be one of"):
        precision_modes.operands("uniform", 2, 2, 2)


@pytest.mark.skipif(HAS_GPU, reason="the refusal is for machines without a GPU")
def test_measuring_the_modes_needs_a_gpu():
    with pytest.raises(RuntimeError, match="needs an MLX GPU backend"):
        precision_modes.measure_modes([8])


def test_a_function_runs_in_a_child_process_with_tf32_on():
    """The child MLX_ENABLE_TF32=1 needs (MLX reads it once a process); its rows come back as JSON."""
    rows = measure.in_tf32_process("precision_modes:errors", "tf32", [8], ["normal"], ["matmul"])
    assert [(r["kernel"], r["precision"], r["M"]) for r in rows] == [(measure.BASELINE, "tf32", 8),
                                                                      ("matmul", "tf32", 8)]


def test_csv_round_trip_the_sweep_rows_and_the_newest_recording(tmp_path):
    rows = [{"device": "Test GPU", "mlx_version": "0.32.4", "date": "2026-11-25", "backend": "cuda",
             "inputs": kind, "kernel": "matmul", "precision": "float32", "M": 64, "N": 64, "K": 64, "error": err}
            for kind, err in (("normal", 1.5e-8), ("wide-range", 2.5e-8))]
    path = precision_modes.write_csv(rows, tmp_path / "precision-modes-2026-11-25-test.csv")
    assert precision_modes.read_csv(path) == rows
    precision_modes.write_csv(rows, tmp_path / "precision-modes-2026-11-24-test.csv")
    (tmp_path / "bench-2026-11-30.csv").write_text("")
    assert results.newest_recorded([tmp_path], precision_modes.RECORDED_GLOB) == path
    (tmp_path / "bad.csv").write_text("kernel,error\nnaive,1\n")
    with pytest.raises(ValueError, match="columns"):
        precision_modes.read_csv(tmp_path / "bad.csv")

    sweep_rows = [{**rows[0], "seconds": 1.0, "error": None}, {**rows[0], "kernel": "naive", "error": 3e-8}]
    for row in sweep_rows:
        row.pop("inputs")
    assert precision_modes.from_sweep(sweep_rows) == [{**rows[0], "kernel": "naive", "error": 3e-8}]
