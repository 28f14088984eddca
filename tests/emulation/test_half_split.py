"""The float16 split (fp16_emulated) on the CPU (stream=mx.cpu, so on a GPU
machine too), where the op computes with mx.matmul like every op, and its numpy
reference: the split's arithmetic, its accuracy against float64 next to
float32's, mx.matmul's shapes and dtypes, and the lines it leaves to float32. tests/gpu/test_gpu_fp16_emulation.py holds the GPU kernels to it."""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.emulation import half_split, scheme


def draw(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_each_line_is_scaled_below_float16s_top_and_split_into_22_bits():
    x = draw((50, 300), 1) * np.float32(1e-20)
    big, small, shift = half_split.split_lines(x, 1)
    scaled = np.ldexp(x.astype(np.float64), shift)
    top = np.abs(scaled).max(axis=1)
    assert ((top >= 2.0**14) & (top < 2.0**15)).all()
    assert np.isfinite(big).all() and np.isfinite(small).all()
    rebuilt = big.astype(np.float64) + small.astype(np.float64)
    # 22 bits, or float16's subnormal spacing where small is that small.
    assert (np.abs(rebuilt - scaled) <= np.maximum(2.0**-22 * np.abs(scaled), 2.0**-25)).all()


@pytest.mark.parametrize("k", [31, 1000, 4096])
def test_the_reference_is_more_accurate_than_float32_from_k_32(k):
    a, b = draw((64, k), k), draw((k, 48), k + 1)
    ours = scheme.errors(half_split.reference(a, b), a, b)[0]
    float32 = scheme.errors(a @ b, a, b)[0]
    assert ours <= float32, (ours, float32)


def test_on_the_cpu_the_op_is_mx_matmul():
    a, b = mx.array(draw((37, 300), 1)), mx.array(draw((300, 45), 2))
    for precision in ("float32", "tf32"):
        c = mlx_sgemm.fp16_emulated(a, b, precision=precision, stream=mx.cpu)
        assert np.array_equal(np.array(c), np.array(mx.matmul(a, b, stream=mx.cpu)))


def test_the_reference_product_is_the_reference():
    a, b = draw((37, 300), 1), draw((300, 45), 2)
    c = half_split.reference_product(mx.array(a), mx.array(b))
    assert np.array_equal(np.array(c), half_split.reference(a, b))


@pytest.mark.parametrize("a_shape, b_shape", [
    ((65,), (65, 33)), ((17, 65), (65,)), ((65,), (65,)), ((3, 17, 65), (65, 33)),
    ((2, 1, 9, 40), (3, 40, 7)), ((1, 1), (1, 1)), ((0, 5), (5, 3)), ((4, 0), (0, 3)),
])
def test_shapes_like_mx_matmul(a_shape, b_shape):
    a, b = mx.array(draw(a_shape, 3)), mx.array(draw(b_shape, 4))
    c, ref = mlx_sgemm.fp16_emulated(a, b, stream=mx.cpu), mx.matmul(a, b, stream=mx.cpu)
    assert c.shape == ref.shape and c.dtype == ref.dtype
    if c.size == 0:  # nothing to compare (and MLX 0.32's CUDA backend crashes copying an empty array out)
        return
    assert np.allclose(np.array(c), np.array(ref), rtol=1e-5, atol=1e-5)


def test_half_operands_give_mx_matmuls_dtype():
    a, b = mx.array(draw((9, 40), 5)).astype(mx.bfloat16), mx.array(draw((40, 7), 6)).astype(mx.float16)
    assert mlx_sgemm.fp16_emulated(a, b, stream=mx.cpu).dtype == mx.matmul(a, b).dtype


def test_outputs_of_lines_too_wide_and_non_finite_ones_are_mx_matmuls():
    """A row too wide for the split (span past MAX_SPAN) or holding an Inf:
    its outputs are mx.matmul's (the device's float32 fallback), every other
    output the split's."""
    a, b = draw((30, 40), 7), draw((40, 20), 8)
    wide = a.copy()
    wide[3, ::2] *= np.float32(1e30)
    wide[3, 1::2] *= np.float32(1e-30)
    non_finite = a.copy()
    non_finite[3, 5] = np.inf
    assert half_split.lines_fit(a, 1).all()
    for x in (wide, non_finite):
        assert list(np.flatnonzero(~half_split.lines_fit(x, 1))) == [3]
        c = np.array(half_split.reference_product(mx.array(x), mx.array(b)))
        ref = np.array(mx.matmul(mx.array(x), mx.array(b), stream=mx.cpu))
        assert np.array_equal(c[3], ref[3], equal_nan=True)
        others = np.delete(np.arange(30), 3)
        assert np.array_equal(c[others], half_split.reference(x[others], b))


def test_a_line_is_taken_up_to_a_span_of_max_span():
    """The bound, at its edge: columns whose smallest nonzero entry lies 2^37
    and 2^38 below their largest (spans of MAX_SPAN and MAX_SPAN + 1: the norm
    exponent counts the norm bound's margin) are taken and not taken, as
    scheme.exponents counts their spans."""
    column = np.zeros((3, 2), np.float32)
    column[:, 0] = [1.0, 2.0**-37, 0]
    column[:, 1] = [1.0, 2.0**-38, 0]
    span = scheme.exponents(column, 0)[2]
    assert list(span) == [half_split.MAX_SPAN, half_split.MAX_SPAN + 1]
    assert list(half_split.lines_fit(column, 0)) == [True, False]


def test_bad_operands_are_named():
    with pytest.raises(ValueError, match="b"):
        mlx_sgemm.fp16_emulated(mx.zeros((3, 4)), mx.zeros((5, 6)), stream=mx.cpu)


def test_tf32_keeps_the_big_part_alone():
    """precision="tf32": each entry rounded to float16 after its line's scaling
    (11 significant bits, TF32's), one product."""
    a, b = draw((37, 300), 11), draw((300, 45), 12)
    big_a, _, e = half_split.split_lines(a, 1)
    big_b, _, f = half_split.split_lines(b, 0)
    want = np.ldexp(big_a.astype(np.float64) @ big_b.astype(np.float64), -(e + f)).astype(np.float32)
    assert np.array_equal(half_split.reference(a, b, "tf32"), want)
    c = np.array(half_split.reference_product(mx.array(a), mx.array(b), "tf32"))
    assert np.array_equal(c, want)


@pytest.mark.parametrize("k", [31, 1000, 4096])
def test_tf32_is_as_accurate_as_rounding_to_11_bits(k):
    """The error of one rounding to 11 significant bits a term (u = 2^-11),
    well above float32's: what TF32 promises, no more."""
    a, b = draw((64, k), k + 2), draw((k, 48), k + 3)
    tf32 = scheme.errors(half_split.reference(a, b, "tf32"), a, b)[0]
    assert 1e-6 < tf32 <= 2.0**-11, tf32
    assert tf32 > 10 * scheme.errors(half_split.reference(a, b), a, b)[0]


def test_a_precision_other_than_float32_or_tf32_is_named():
    with pytest.raises(ValueError, match="precision"):
        mlx_sgemm.fp16_emulated(mx.zeros((3, 4)), mx.zeros((4, 5)), precision="float16", stream=mx.cpu)


def test_the_products_take_a_block_an_sm_each_taking_several_tiles(monkeypatch):
    from mlx_sgemm.dispatch import device

    monkeypatch.setattr(device, "cuda_multiprocessors", lambda: 132)
    assert half_split.product_blocks(512) == 132  # 4096^3: 32 x 16 tiles, 3 or 4 a block
    assert half_split.product_blocks(100) == 100  # fewer tiles than SMs: a tile a block
    monkeypatch.setattr(device, "cuda_multiprocessors", lambda: None)  # SMs unknown
    assert half_split.product_blocks(512) == 512


def test_the_sm_count_comes_from_the_driver_where_there_is_a_cuda_gpu():
    from mlx_sgemm.dispatch import device

    count = device.cuda_multiprocessors()
    assert (count is None) if not mx.cuda.is_available() else count > 0
