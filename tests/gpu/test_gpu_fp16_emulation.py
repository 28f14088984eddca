"""The float16 split (``fp16_emulated``) on a Hopper GPU: its accuracy against
float64 next to cuBLAS SGEMM's (normal, positive, GEMMul8's hard inputs; K
from 1 to past the INT8 emulation's int32 bound), every output written
(NaN-poisoned outputs) at tile edges, the lines the split marks and the
float32 fallback for them (too wide) and for Inf and NaN, every shape class of the
other ops; and its one-part TF32 form (precision="tf32") against the one-pass
TF32 pipeline, and matmul's use of it."""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device
from mlx_sgemm.emulation import half_split, scheme

from ..conftest import GPU_BACKEND, requires_gpu
from . import emulation_shapes

pytestmark = [
    requires_gpu,
    pytest.mark.gpu,
    pytest.mark.skipif(GPU_BACKEND != "cuda", reason="the float16 split's kernels are CUDA kernels"),
    pytest.mark.skipif(not device.has_wgmma(), reason="the float16 split's products use Hopper's wgmma"),
]


_inputs = accuracy.emulation_inputs


def _split_taken(x: mx.array, y: mx.array) -> bool:
    """Every line of x and y taken by the split on the device."""
    rows, cols = half_split.lines_taken(x, y)
    return bool(rows.all() and cols.all())


# The contract, as measured on an H100 (benchmarks/fp16_emulation.py
# --accuracy): on zero-mean inputs from K = 32 the normwise error is at or
# below cuBLAS SGEMM's or within 1.5x of it (7.3e-9 -> 4.9e-9 at K = 4096; 2.7e-9
# -> 3.9e-9 at K = 65536); below K = 32 its 22-bit parts gain nothing on
# float32's one rounding a product (K = 1: ~3x cuBLAS's, a few float32 ulps);
# on all-positive inputs the tensor cores' adds, which round toward zero, lose
# on every k-tile in the same direction: ~2.7x cuBLAS's, as the 3xTF32
# pipeline (2.2e-7 against cuBLAS's 8.0e-8 at K = 4096).
def _bound(kind: str, k: int) -> float:
    return 4.0 if k < 32 else 3.0 if kind == "positive" else 1.5


@pytest.mark.parametrize("kind", ["normal", "positive", "phi0.5", "phi1", "phi2"])
@pytest.mark.parametrize("k", [1, 31, 1000, 4096])
def test_accuracy_against_float32_sgemm(kind, k):
    rng = np.random.default_rng(k)
    a, b = _inputs(kind, 200, 160, k, rng)
    x, y = mx.array(a), mx.array(b)
    assert _split_taken(x, y)
    with launcher.poisoned_outputs():
        c = np.array(mlx_sgemm.fp16_emulated(x, y))
    assert np.isfinite(c).all()
    normwise, componentwise = scheme.errors(c, a, b)
    ref_normwise, ref_componentwise = scheme.errors(np.array(mx.matmul(x, y)), a, b)
    assert normwise <= _bound(kind, k) * max(ref_normwise, 1e-9), (normwise, ref_normwise)
    assert componentwise <= 1e-5, (componentwise, ref_componentwise)


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (129, 193, 65), (300, 517, 1000), (1000, 999, 4097), (5, 700, 63)])
def test_every_output_written_at_the_tile_edges(m, n, k):
    rng = np.random.default_rng(m + n + k)
    a, b = _inputs("normal", m, n, k, rng)
    with launcher.poisoned_outputs():
        c = np.array(mlx_sgemm.fp16_emulated(mx.array(a), mx.array(b)))
    assert np.isfinite(c).all()
    assert scheme.errors(c, a, b)[0] <= 1e-7


@pytest.mark.parametrize("m, n, k, poison", [(129, 193, 65, None), (1000, 999, 4097, None), (300, 520, 200, "inf"),
                                            (2048, 2048, 512, None), (700, 1500, 300, "wide")])
def test_both_products_blocks_give_the_same_outputs(monkeypatch, m, n, k, poison):
    """128 x 192 and 128 x 128 blocks (kernel_choice.half_split_spec) sum each
    output's k-tiles in the same order: the same outputs bit for bit, at tile
    edges, with the fallback's tiles (an Inf and a NaN line) and with none
    split (a line too wide), every output written (NaN-poisoned outputs)."""
    from mlx_sgemm.dispatch import kernel_choice

    rng = np.random.default_rng(m + n + k)
    a, b = _inputs("1e30 next to 1e-30" if poison == "wide" else "normal", m, n, k, rng)
    if poison == "inf":
        a[5, 3], b[7, 400] = np.inf, np.nan
    x, y = mx.array(a), mx.array(b)
    got = {}
    for spec in (kernel_choice.HALF_SPLIT, kernel_choice.HALF_SPLIT_NARROW):
        monkeypatch.setattr(kernel_choice, "half_split_spec", lambda *args, spec=spec, **kw: spec)
        with launcher.poisoned_outputs():
            got[spec.block_n] = np.array(half_split.split_product(x, y))
    assert np.array_equal(got[192], got[128], equal_nan=True)
    written = np.isfinite(got[128])  # a poisoned output left unwritten stays NaN
    if poison == "inf":
        written[5, :] = written[:, 400] = True  # the Inf line's and the NaN line's outputs
    assert written.all()


def test_k_past_the_int8_emulations_bound():
    """No integer bound here: float32 sums, any K."""
    rng = np.random.default_rng(3)
    for k in (65536, 140000):
        a, b = _inputs("normal", 16, 24, k, rng)
        c = np.array(mlx_sgemm.fp16_emulated(mx.array(a), mx.array(b)))
        cublas = scheme.errors(np.array(mx.matmul(mx.array(a), mx.array(b))), a, b)[0]
        assert scheme.errors(c, a, b)[0] <= _bound("normal", k) * cublas


def test_lines_too_wide_are_tile_threads_on_the_device():
    """A span past MAX_SPAN: the split marks the line (the same lines as the
    numpy rule), its outputs are tile_threads' bit for bit, every other output
    is the split's (NaN-poisoned outputs), queued without a read-back."""
    rng = np.random.default_rng(8)
    a, b = _inputs("1e30 next to 1e-30", 300, 270, 500, rng)
    x, y = mx.array(a), mx.array(b)
    rows, cols = half_split.lines_taken(x, y)
    assert np.array_equal(rows, half_split.lines_fit(a, 1)) and np.array_equal(cols, half_split.lines_fit(b, 0))
    assert 0 < rows.sum() < len(rows) and 0 < cols.sum() < len(cols)
    with launcher.poisoned_outputs():
        got, threads = np.array(mlx_sgemm.fp16_emulated(x, y)), np.array(ops.tile_threads(x, y))
    taken = rows[:, None] & cols[None, :]
    assert np.array_equal(got[~taken], threads[~taken])
    want = np.array(half_split.reference_product(x, y))
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert (np.abs(got.astype(np.float64) - want)[taken] <= 2.0**-21 * scale[taken]).all()
    assert np.isfinite(got).all()


def test_non_finite_lines_take_the_fallbacks_outputs():
    rng = np.random.default_rng(9)
    a, b = _inputs("normal", 300, 520, 200, rng)
    a[5, 3], b[7, 400] = np.inf, np.nan
    x, y = mx.array(a), mx.array(b)
    with launcher.poisoned_outputs():
        got, threads = np.array(mlx_sgemm.fp16_emulated(x, y)), np.array(ops.tile_threads(x, y))
    bad = np.zeros(got.shape, bool)
    bad[5, :], bad[:, 400] = True, True
    assert np.array_equal(got[bad], threads[bad], equal_nan=True)
    assert np.isfinite(got[~bad]).all()
    ref = a.astype(np.float64) @ b
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert (np.abs(got - ref)[~bad] <= 1e-6 * scale[~bad]).all()


def test_inf_and_nan_land_where_mx_matmul_puts_them():
    rng = np.random.default_rng(4)
    a, b = _inputs("normal", 40, 30, 50, rng)
    a[3, 7], a[9, 1], b[4, 11] = np.inf, np.nan, -np.inf
    c = np.array(mlx_sgemm.fp16_emulated(mx.array(a), mx.array(b)))
    ref = np.array(mx.matmul(mx.array(a), mx.array(b)))
    assert np.array_equal(np.isnan(c), np.isnan(ref)) and np.array_equal(np.isinf(c), np.isinf(ref))


def test_runs_inside_mx_compile():
    rng = np.random.default_rng(10)
    x, y = (mx.array(v) for v in _inputs("normal", 130, 70, 300, rng))
    assert np.array_equal(np.array(mx.compile(mlx_sgemm.fp16_emulated)(x, y)), np.array(mlx_sgemm.fp16_emulated(x, y)))


@pytest.mark.parametrize("a_shape, b_shape", emulation_shapes.SHAPES)
def test_shapes_like_mx_matmul(a_shape, b_shape):
    emulation_shapes.assert_like_mx_matmul(lambda a, b: mlx_sgemm.fp16_emulated(a, b), a_shape, b_shape)


def test_views_and_half_operands():
    rng = np.random.default_rng(6)
    w = mx.array(rng.standard_normal((300, 257)).astype(np.float32))
    x = mx.array(rng.standard_normal((129, 300 * 2)).astype(np.float32))[:, ::2]
    ref = np.array(x).astype(np.float64) @ np.array(w).astype(np.float64)
    assert np.allclose(np.array(mlx_sgemm.fp16_emulated(x, w)), ref, rtol=1e-5, atol=1e-5)  # A a strided view
    wt = mx.array(rng.standard_normal((257, 300)).astype(np.float32))
    c = mlx_sgemm.fp16_emulated(x, wt.T)  # x @ W.T
    assert np.allclose(np.array(c), np.array(x).astype(np.float64) @ np.array(wt).T.astype(np.float64),
                       rtol=1e-5, atol=1e-5)
    assert mlx_sgemm.fp16_emulated(x.astype(mx.bfloat16), wt.T.astype(mx.bfloat16)).dtype == mx.bfloat16


def test_the_gpu_is_the_numpy_reference_up_to_the_tensor_cores_rounding():
    rng = np.random.default_rng(11)
    a, b = _inputs("normal", 257, 300, 700, rng)
    got = np.array(mlx_sgemm.fp16_emulated(mx.array(a), mx.array(b)))
    want = half_split.reference(a, b)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert (np.abs(got.astype(np.float64) - want) <= 2.0**-21 * scale).all()


def test_matmul_takes_the_split_for_big_float32_products():
    """Past kernel_choice's bounds (4096^3 here, and edges of no tile), matmul
    (float32) is fp16_emulated, bit for bit; deterministic=True keeps the
    wgmma pipeline."""
    n = 4096 + 3
    rng = np.random.default_rng(11)
    a = mx.array(rng.standard_normal((n, n)).astype(np.float32))
    b = mx.array(rng.standard_normal((n, n)).astype(np.float32))
    got = mlx_sgemm.matmul(a, b)
    assert np.array_equal(np.array(got), np.array(mlx_sgemm.fp16_emulated(a, b)))
    rows = slice(0, 64)
    ref = np.array(a[rows]).astype(np.float64) @ np.array(b).astype(np.float64)
    bound = np.abs(np.array(a[rows]).astype(np.float64)) @ np.abs(np.array(b).astype(np.float64))
    ours = np.linalg.norm(np.array(got[rows]) - ref) / np.linalg.norm(bound)
    cublas = np.linalg.norm(np.array(mx.matmul(a, b)[rows]) - ref) / np.linalg.norm(bound)
    assert ours <= cublas, (ours, cublas)
    assert not np.array_equal(np.array(mlx_sgemm.matmul(a, b, deterministic=True)), np.array(got))


# precision="tf32" (one float16 part a line): each entry rounded to nearest
# with 11 significant bits, as the one-pass TF32 pipeline rounds each operand
# to nearest TF32 (numpy: the errors of rounding both operands to TF32 to
# nearest, cuBLAS TF32's in MLX). The same roundings but for ties and the
# summation order: on zero-mean inputs the errors agree within a few percent.
# (On all-positive inputs the split's sum stays in the tensor cores across K,
# as cuBLAS's does, where the pipeline's blocks of up to 128 rows add each
# k-tile in the FP32 units: test_gpu_tf32_rounding holds both to cuBLAS's
# error there.)
@pytest.mark.parametrize("kind", ["normal", "phi1", "phi2"])
@pytest.mark.parametrize("k", [31, 1000, 4096])
def test_tf32_accuracy_against_the_tf32_pipeline(kind, k):
    rng = np.random.default_rng(k + 7)
    a, b = _inputs(kind, 200, 160, k, rng)
    x, y = mx.array(a), mx.array(b)
    assert _split_taken(x, y)
    with launcher.poisoned_outputs():
        c = np.array(mlx_sgemm.fp16_emulated(x, y, precision="tf32"))
    assert np.isfinite(c).all()
    normwise, componentwise = scheme.errors(c, a, b)
    pipeline = scheme.errors(np.array(mlx_sgemm.matmul(x, y, precision="tf32", deterministic=True)), a, b)
    assert normwise <= 1.1 * pipeline[0] and componentwise <= 1.1 * pipeline[1], (
        (normwise, componentwise), pipeline)
    assert normwise > 1e-6  # one part: TF32's accuracy, not float32's


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (129, 257, 65), (1000, 999, 4097), (5, 700, 63)])
def test_tf32_writes_every_output_and_is_the_reference_up_to_the_tensor_cores_rounding(m, n, k):
    rng = np.random.default_rng(m + n + k + 1)
    a, b = _inputs("normal", m, n, k, rng)
    with launcher.poisoned_outputs():
        got = np.array(mlx_sgemm.fp16_emulated(mx.array(a), mx.array(b), precision="tf32"))
    assert np.isfinite(got).all()
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    want = half_split.reference(a, b, "tf32")
    assert (np.abs(got.astype(np.float64) - want) <= 2.0**-19 * scale).all()  # TF32 rounding: ~2^-12


def test_tf32_non_finite_and_wide_lines_take_the_fallback():
    rng = np.random.default_rng(12)
    a, b = _inputs("normal", 300, 260, 500, rng)
    a[5, 7], b[11, 3] = np.nan, np.inf
    x, y = mx.array(a), mx.array(b)
    c, ref = np.array(mlx_sgemm.fp16_emulated(x, y, precision="tf32")), np.array(mx.matmul(x, y))
    assert np.array_equal(np.isnan(c), np.isnan(ref)) and np.array_equal(np.isinf(c), np.isinf(ref))
    a, b = _inputs("1e30 next to 1e-30", 300, 270, 500, rng)
    x, y = mx.array(a), mx.array(b)
    rows, cols = half_split.lines_taken(x, y)
    taken = rows[:, None] & cols[None, :]
    assert 0 < taken.sum() < taken.size
    with launcher.poisoned_outputs():
        got, threads = np.array(mlx_sgemm.fp16_emulated(x, y, precision="tf32")), np.array(ops.tile_threads(x, y))
    assert np.array_equal(got[~taken], threads[~taken])
    want = np.array(half_split.reference_product(x, y, "tf32"))
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert (np.abs(got.astype(np.float64) - want)[taken] <= 2.0**-18 * scale[taken]).all()


def test_matmul_takes_the_one_part_split_for_big_tf32_products():
    """Past kernel_choice's TF32 bound (8192^3 here), matmul(precision="tf32")
    is fp16_emulated(precision="tf32") bit for bit, at the TF32 pipeline's
    error (both round each operand to nearest; the sums differ in order)."""
    n = 8192
    rng = np.random.default_rng(13)
    a = mx.array(rng.standard_normal((n, n)).astype(np.float32))
    b = mx.array(rng.standard_normal((n, n)).astype(np.float32))
    got = mlx_sgemm.matmul(a, b, precision="tf32")
    assert np.array_equal(np.array(got), np.array(mlx_sgemm.fp16_emulated(a, b, precision="tf32")))
    rows = slice(0, 32)
    ref = np.array(a[rows]).astype(np.float64) @ np.array(b).astype(np.float64)
    bound = np.linalg.norm(np.abs(np.array(a[rows]).astype(np.float64)) @ np.abs(np.array(b).astype(np.float64)))
    ours = np.linalg.norm(np.array(got[rows]) - ref) / bound
    pipeline = mlx_sgemm.matmul(a, b, precision="tf32", deterministic=True)
    assert ours <= 1.05 * np.linalg.norm(np.array(pipeline[rows]) - ref) / bound
