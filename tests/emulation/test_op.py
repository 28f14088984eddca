"""int8_emulated and assess on the CPU: the op computes with mx.matmul there,
like every op; op.reference, the numpy steps the GPU kernels match, gives
mx.matmul's shapes, dtypes and errors, the choice of moduli and its reasons,
the fallback, Inf and NaN positions.
tests/gpu/test_gpu_int8_emulation.py holds the GPU kernels to the reference."""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.emulation import moduli, op, scheme


def draw(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_on_the_cpu_the_op_is_mx_matmul():
    a, b = mx.array(draw((37, 300), 1)), mx.array(draw((300, 45), 2))
    c = mlx_sgemm.int8_emulated(a, b, stream=mx.cpu)
    assert np.array_equal(np.array(c), np.array(mx.matmul(a, b, stream=mx.cpu)))


def test_the_reference_is_the_scheme():
    a, b = draw((37, 300), 1), draw((300, 45), 2)
    c = op.reference(mx.array(a), mx.array(b))
    verdict = op.assess(mx.array(a), mx.array(b))[0]
    assert verdict.reason is None and verdict.moduli == 7
    want, _ = scheme.emulate(a, b, moduli=verdict.moduli, bits=verdict.bits)
    assert np.array_equal(np.array(c), want)
    assert scheme.errors(np.array(c), a, b)[0] < 2e-8


@pytest.mark.parametrize("a_shape, b_shape", [
    ((65,), (65, 33)), ((17, 65), (65,)), ((65,), (65,)), ((3, 17, 65), (65, 33)),
    ((2, 1, 9, 40), (3, 40, 7)), ((1, 1), (1, 1)), ((0, 5), (5, 3)), ((4, 0), (0, 3)),
])
def test_shapes_like_mx_matmul(a_shape, b_shape):
    a, b = mx.array(draw(a_shape, 3)), mx.array(draw(b_shape, 4))
    c = mlx_sgemm.int8_emulated(a, b, moduli=8)
    ref = mx.matmul(a, b)
    assert c.shape == ref.shape and c.dtype == ref.dtype
    if c.size == 0:  # nothing to compare (and MLX 0.32's CUDA backend crashes copying an empty array out)
        return
    assert np.allclose(np.array(c), np.array(ref), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_dtype, b_dtype", [
    (mx.float16, mx.float16), (mx.bfloat16, mx.bfloat16), (mx.float32, mx.bfloat16),
])
def test_result_dtype_is_mx_matmuls(a_dtype, b_dtype):
    a, b = mx.array(draw((8, 16), 5)).astype(a_dtype), mx.array(draw((16, 4), 6)).astype(b_dtype)
    assert mlx_sgemm.int8_emulated(a, b).dtype == mx.matmul(a, b).dtype


def test_an_empty_product_is_zeros_and_says_so():
    c = mlx_sgemm.int8_emulated(mx.ones((3, 0)), mx.ones((0, 2)))
    assert c.shape == (3, 2) and mx.all(c == 0).item()
    (verdict,) = op.assess(mx.ones((3, 0)), mx.ones((0, 2)))
    assert "empty product" in verdict.reason


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="a must have dtype"):
        mlx_sgemm.int8_emulated(mx.array([[1, 2]], dtype=mx.int32), mx.ones((2, 2)))
    with pytest.raises(ValueError, match="inner dimensions differ"):
        mlx_sgemm.int8_emulated(mx.ones((2, 3)), mx.ones((4, 2)))
    with pytest.raises(ValueError, match="moduli must be 1..20"):
        mlx_sgemm.int8_emulated(mx.ones((2, 3)), mx.ones((3, 2)), moduli=0)


def test_inf_and_nan_land_where_mx_matmul_puts_them():
    a, b = draw((20, 30), 7), draw((30, 10), 8)
    a[3, 7], a[9, 1], b[4, 6] = np.inf, np.nan, -np.inf
    c = np.array(op.reference(mx.array(a), mx.array(b)))
    ref = np.array(mx.matmul(mx.array(a), mx.array(b)))
    assert np.array_equal(np.isnan(c), np.isnan(ref)) and np.array_equal(np.isinf(c), np.isinf(ref))


def test_wide_lines_go_to_tile_threads_and_say_why():
    """A row of 1e30 next to 1e-30 needs more bits than 12 moduli carry."""
    a, b = draw((16, 64), 9), draw((64, 16), 10)
    a[5, :] = 1e-30
    a[5, 3] = 1e30
    verdict = op.assess(mx.array(a), mx.array(b))[0]
    assert verdict.reason is not None and "row 5 of a" in verdict.reason
    assert op.fallback(verdict) is mlx_sgemm.tile_threads
    c = op.reference(mx.array(a), mx.array(b))
    assert np.array_equal(np.array(c), np.array(mlx_sgemm.tile_threads(mx.array(a), mx.array(b))))


def test_past_the_int32_bound_matmul_computes():
    k = moduli.INT32_EXACT_K + 1
    verdict = op.assess(mx.ones((1, k)), mx.ones((k, 1)))[0]
    assert "K must be split" in verdict.reason
    assert op.fallback(verdict) is not mlx_sgemm.tile_threads


def test_fixed_moduli_carry_their_bits():
    verdict = op.assess(mx.ones((2, 64)), mx.ones((64, 2)), moduli=7)[0]
    assert verdict.moduli == 7 and verdict.bits == moduli.bits_for(64, 7) == 27


def test_more_moduli_more_accuracy():
    a, b = draw((32, 512), 11), draw((512, 32), 12)
    errs = [scheme.errors(np.array(op.reference(mx.array(a), mx.array(b), moduli=s)), a, b)[0]
            for s in (5, 6, 7, 8)]
    assert errs[0] > errs[1] > errs[2] > errs[3]
