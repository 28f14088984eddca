"""measure.measure: each kernel timed side by side with mx.matmul at its precision.

The CPU tests run anywhere (on MLX's CPU backend every op computes with
mx.matmul, so the ratios are near 1 and the errors tiny); the CUDA test checks
that the TF32 rows come from a process where mx.matmul really is TF32.
"""

import mlx.core as mx
import pytest

import mlx_sgemm
from mlx_sgemm.bench import measure, peaks, timing

from ..conftest import GPU_BACKEND

SHAPES = [(7, 5, 3), (9, 4, 2)]
PEAK = peaks.DevicePeak(None, None, "test")


def rows_by_kernel(results, shape, precision):
    return {r.kernel: r for r in results if (r.M, r.N, r.K) == shape and r.precision == precision}


def test_every_kernel_gets_a_row_and_its_ratio_to_the_baseline_beside_it():
    results = measure.measure(SHAPES, ["naive", "matmul"], ["float32"], repeats=2, peak=PEAK, progress=False)
    for shape in SHAPES:
        rows = rows_by_kernel(results, shape, "float32")
        assert set(rows) == {measure.BASELINE, "naive", "matmul"}
        base = rows[measure.BASELINE].seconds
        for row in rows.values():
            assert row.x_matmul == pytest.approx(base / row.seconds)
            assert row.error is not None and row.error < 1e-5
    assert len(results) == 3 * len(SHAPES)
    assert all(r.spread is not None and r.spread >= 0 for r in results)
    assert all(r.peak_kind == peaks.units(dict(backend=r.backend, kernel=r.kernel, precision=r.precision,
                                               device=r.device, M=r.M, N=r.N, K=r.K))
               for r in results)
    import mlx_sgemm

    assert {r.mlx_sgemm_version for r in results} == {mlx_sgemm.__version__}


def test_spread_is_the_range_of_the_rounds_over_their_median():
    assert timing.spread([1.0, 1.1, 0.9]) == pytest.approx(0.2)


@pytest.mark.parametrize("backend,kernel,precision,kind,peak", [
    ("cuda", "tile_threads", "float32", "FP32", 67_000), ("cuda", "mx.matmul", "float32", "FP32", 67_000),
    ("cuda", "tile_async", "float32", "3xTF32", 494_700 / 3), ("cuda", "matmul", "float32", "3xTF32", 494_700 / 3),
    ("cuda", "matmul", "tf32", "TF32", 494_700), ("cuda", "mx.matmul", "tf32", "TF32", 494_700),
    ("metal", "tile_simdgroup", "float32", "FP32", 67_000),
])
def test_each_row_is_measured_against_its_units_peak(backend, kernel, precision, kind, peak):
    row = dict(backend=backend, kernel=kernel, precision=precision)
    h100 = peaks.lookup("NVIDIA H100 80GB HBM3")
    assert peaks.units(row) == kind
    assert peaks.units_peak(row, h100) == pytest.approx(peak)


@pytest.mark.parametrize("device, precision, size, kind, peak, before_the_split", [
    ("NVIDIA H100 80GB HBM3", "float32", 4096, "3xFP16", 989_500 / 3, "3xTF32"),  # matmul runs the float16 split
    ("NVIDIA H200", "tf32", 8192, "FP16", 989_500, "TF32"),  # its one-part form
    ("NVIDIA H100 80GB HBM3", "float32", 1024, "3xTF32", 494_700 / 3, "3xTF32"),  # a side below 2048: the pipeline
    ("NVIDIA H100 80GB HBM3", "tf32", 2048, "TF32", 494_700, "TF32"),  # below the TF32 rule's bounds
    ("NVIDIA A100-SXM4-80GB", "float32", 4096, "FP32", 19_500, "FP32"),  # no wgmma: tile_threads' FMAs
    ("NVIDIA A100-SXM4-80GB", "tf32", 4096, "TF32", 156_000, "TF32"),  # no wgmma: the cp.async TF32 pipeline
])
def test_matmul_rows_are_measured_against_the_units_it_ran_on(device, precision, size, kind, peak, before_the_split):
    row = dict(backend="cuda", kernel="matmul", precision=precision, device=device, M=size, N=size, K=size)
    assert peaks.units(row) == kind
    assert peaks.units_peak(row, peaks.lookup(device)) == pytest.approx(peak)
    # Runs recorded before the split existed keep the pipeline's units.
    assert peaks.units(row, split=False) == before_the_split


def test_the_int8_peaks_are_the_datasheets_dense_figures():
    assert peaks.lookup("NVIDIA H100 80GB HBM3").int8_gops == 1_979_000
    assert peaks.lookup("NVIDIA H200").int8_gops == 1_979_000
    assert peaks.lookup("NVIDIA H100 PCIe").int8_gops == 1_513_000
    assert peaks.lookup("NVIDIA GeForce RTX 4090").int8_gops is None
    assert peaks.lookup("Apple M2").int8_gops is None


def test_the_commit_is_empty_outside_git(monkeypatch):
    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(measure.subprocess, "run", no_git)
    monkeypatch.delenv(measure.COMMIT_VARIABLE, raising=False)
    assert measure.source_commit() == ""


def test_a_copy_of_a_checkout_may_name_its_commit(monkeypatch):
    """A tree synced to a GPU machine beside an older .git would otherwise
    record that older commit, marked dirty."""
    monkeypatch.setenv(measure.COMMIT_VARIABLE, "fdaf08e")
    monkeypatch.setattr(measure.subprocess, "run", lambda *a, **k: pytest.fail("git asked"))
    assert measure.source_commit() == "fdaf08e"


def test_a_shape_is_timed_in_one_set_of_alternating_rounds(monkeypatch):
    """Ours and mx.matmul in the same rounds, so that a drift of the clock lands on both;
    one product per evaluation unless asked otherwise."""
    calls = []

    def fake(fns, *, rounds, repeats, **how):
        calls.append((sorted(fns), rounds, repeats, how))
        return {name: [1.0 + i] * rounds for i, name in enumerate(fns)}

    monkeypatch.setattr(timing, "alternating_rounds", fake)
    measure.measure(SHAPES, ["naive", "matmul"], ["float32"], repeats=5, peak=PEAK, progress=False)
    one = dict(calls=timing.ONE_AT_A_TIME, per_evaluation=None)
    assert calls == [(sorted([measure.BASELINE, "naive", "matmul"]), measure.ROUNDS, 5, one)] * len(SHAPES)
    assert measure.ROUNDS >= 2
    calls.clear()
    rows = measure.measure(SHAPES[:1], ["naive"], ["float32"], repeats=5, peak=PEAK, progress=False,
                           calls=timing.INDEPENDENT, per_evaluation=4)
    assert [how for *_, how in calls] == [dict(calls=timing.INDEPENDENT, per_evaluation=4)]
    assert {r.calls for r in rows} == {timing.INDEPENDENT}


def test_each_dtype_is_timed_on_operands_of_it_beside_mx_matmul_on_the_same(monkeypatch):
    """Both operands of the dtype; mx.matmul and ours handed the same arrays; a
    half dtype once, at matmul's default precision, whatever precisions are asked."""
    handed = {}

    def fake(fns, *, rounds, repeats, **how):
        for name, fn in fns.items():
            handed.setdefault(name, []).append(fn().dtype)
        return {name: [1.0] * rounds for name in fns}

    monkeypatch.setattr(timing, "alternating_rounds", fake)
    rows = measure.measure([(7, 5, 3)], ["naive", "matmul"], ["float32", "tf32"], repeats=2, peak=PEAK,
                           progress=False, dtypes=["float32", "float16", "bfloat16"])
    assert handed == {name: [mx.float32, mx.float16, mx.bfloat16] for name in (measure.BASELINE, "naive", "matmul")}
    got = {(r.dtype, r.precision, r.kernel) for r in rows}
    # TF32 is CUDA's only: there matmul and cuBLAS are also timed at TF32 (float32 operands).
    tf32 = {("float32", "tf32", k) for k in (measure.BASELINE, "matmul")} if GPU_BACKEND == "cuda" else set()
    assert got == {(d, measure.HALF_PRECISION, k) for d in measure.DTYPES
                   for k in (measure.BASELINE, "naive", "matmul")} | tf32
    assert {r.calls for r in rows} == {timing.ONE_AT_A_TIME}
    with pytest.raises(ValueError, match="dtypes must be among"):
        measure.measure([(7, 5, 3)], ["naive"], ["float32"], dtypes=["float64"], peak=PEAK, progress=False)


@pytest.mark.parametrize("dtype,bound", [("float16", 2.0**-10), ("bfloat16", 2.0**-7)])
def test_a_half_products_error_is_against_float64_of_its_operands_values(dtype, bound):
    """The output rounded to the half dtype dominates: within a unit of its last
    place, and mx.matmul's beside it alike; float32 stays far below."""
    a, b = measure.operands((64, 48, 96), dtype)
    reference = measure.SampledReference(a, b)
    ours, theirs = reference.error(mlx_sgemm.matmul(a, b)), reference.error(mx.matmul(a, b))
    assert 0 < ours < bound and 0 < theirs < bound
    a32, b32 = measure.operands((64, 48, 96))
    assert measure.sampled_error(mx.matmul(a32, b32), a32, b32) < 1e-6


@pytest.mark.parametrize("dtype,units", [("float16", "FP16"), ("bfloat16", "BF16"), ("float32", "FP32")])
def test_mx_matmul_on_half_operands_is_of_the_half_tensor_cores(dtype, units):
    row = dict(backend="cuda", kernel="mx.matmul", precision="float32", dtype=dtype, device="NVIDIA H100 80GB HBM3")
    assert peaks.units(row) == units
    expected = 989_500 if units != "FP32" else 67_000
    assert peaks.units_peak(row, peaks.lookup("NVIDIA H100 80GB HBM3")) == pytest.approx(expected)
    ours = dict(row, kernel="tile_threads")
    assert peaks.units(ours) == "FP32"  # our stage kernels compute half operands in float32
    for m in (1, 8, 512):  # matmul's on halves: half_gemv for a few rows, half_wgmma above
        assert dtype == "float32" or peaks.units(dict(row, kernel="matmul", M=m, N=4096, K=4096)) == units


@pytest.mark.skipif(GPU_BACKEND != "cuda", reason="TF32 exists on MLX's CUDA backend only")
def test_tf32_rows_compare_with_cublas_tf32_timed_beside_them():
    shape = (512, 512, 512)
    results = measure.measure([shape], ["matmul"], ["float32", "tf32"], repeats=3, peak=PEAK, progress=False)
    f32, tf32 = rows_by_kernel(results, shape, "float32"), rows_by_kernel(results, shape, "tf32")
    assert set(f32) == set(tf32) == {measure.BASELINE, "matmul"}
    # TF32 on in the child (10 mantissa bits: ~1e-4), off here (cuBLAS SGEMM).
    assert tf32[measure.BASELINE].error > 1e-6 > f32[measure.BASELINE].error
    assert tf32["matmul"].x_matmul == pytest.approx(tf32[measure.BASELINE].seconds / tf32["matmul"].seconds)
    assert f32["matmul"].error < 1e-6


def test_rows_are_appended_under_the_files_columns_only(tmp_path):
    from mlx_sgemm.bench import results

    path = tmp_path / "run.csv"
    assert results.append_rows([{"a": 1, "b": 2}], path)
    assert results.append_rows([{"a": 3, "b": 4}], path)
    assert path.read_text().splitlines() == ["a,b", "1,2", "3,4"]
    assert not results.append_rows([{"a": 5, "c": 6}], path)  # other columns: nothing written
    assert path.read_text().splitlines() == ["a,b", "1,2", "3,4"]
