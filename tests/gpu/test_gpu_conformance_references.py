"""The products of MLX's tests whose own check is set aside on CUDA
(tests/conformance/run_mlx_suite.py): there MLX compares a float32 product
with MLX's segmented_mm or block_masked_mm at a tolerance below those ops' own
error. Here the same products, through every op, are checked against float64
instead: each element within the float32 bound for any summation order,
K u (|A| |B|)_ij, plus what the 3xTF32 kernels' split of each operand costs a
product (PER_PRODUCT), outputs poisoned with NaN first.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm import ops

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

OPS = list(ops.KERNELS)
U = 2.0**-24  # float32's unit roundoff
# The 3xTF32 kernels (tile_simdgroup, tile_async, matmul's pipelines) carry each
# operand as two TF32 parts: a product is off by up to 2^-21 + 2^-22 + 2^-23 of
# |a||b| (the low parts' rounding to TF32, the dropped low x low term, the tensor
# cores' truncating add), more than K u where K is 1 (on an H200 the gradients
# below, with an inner dimension of 1, were up to 5e-7 past K u's bound alone).
PER_PRODUCT = 7 * 2.0**-23


def f64(x: mx.array) -> np.ndarray:
    return np.array(x.astype(mx.float32), np.float64)


def within_bound(c: mx.array, ref: np.ndarray, bound: np.ndarray):
    c = f64(c)
    assert c.shape == ref.shape and np.isfinite(c).all(), "wrong shape, or NaN/Inf (an unwritten element?)"
    worst = np.abs(c - ref) - bound
    assert (worst <= 0).all(), f"{(worst > 0).sum()} elements past the bound, worst by {worst.max():.2e}"


def within_float32_bound(c: mx.array, a: np.ndarray, b: np.ndarray):
    within_bound(c, a @ b, (a.shape[-1] * U + PER_PRODUCT) * (np.abs(a) @ np.abs(b)))


@pytest.mark.parametrize("layout", ["a @ b", "a.T @ b", "a @ b.T", "a.T @ b.T"])
@pytest.mark.parametrize("op", OPS)
def test_segments_of_k_as_segmented_mm_takes_them(op, layout):
    """MLX's test_segmented_mm: slices a[:, s1:s2] @ b[s1:s2, :] of M = N = K = 1000
    operands, the slices starting at offsets that are multiples of no tile."""
    m = n = k = 1000
    a = mx.random.normal((k, m)).T if "a.T" in layout else mx.random.normal((m, k))
    b = mx.random.normal((n, k)).T if "b.T" in layout else mx.random.normal((k, n))
    product = ops.op_by_name(op)
    for s1, s2 in [(0, 999), (0, 500), (500, 999), (111, 222), (888, 999)]:
        with mlx_sgemm.poisoned_outputs():
            c = product(a[:, s1:s2], b[s1:s2, :])
        within_float32_bound(c, f64(a)[:, s1:s2], f64(b)[s1:s2, :])


@pytest.mark.parametrize("mnk", [(128, 128, 128), (64, 64, 16), (1, 128, 128), (256, 1, 128)])
@pytest.mark.parametrize("op", OPS)
def test_gradients_of_a_block_masked_product(op, mnk):
    """MLX's test_block_masked_matmul's reference: gradients of
    ((mask_a * a) @ (mask_b * b)) * mask_out with a cotangent of ones, through
    the op's vjp (the products G @ B^T and A^T @ G on transposed views)."""
    m, n, k = mnk
    rng = np.random.default_rng(0)
    as32 = lambda x: x.astype(np.float32)  # noqa: E731
    a, b = as32(rng.standard_normal((m, k))), as32(rng.standard_normal((k, n)))
    ma, mb, mo = (as32(np.maximum(rng.standard_normal(s), 0)) for s in ((m, k), (k, n), (m, n)))
    product = ops.op_by_name(op)

    def f(a_, b_):
        return mx.sum(product(mx.array(ma) * a_, mx.array(mb) * b_) * mx.array(mo))

    with mlx_sgemm.poisoned_outputs():
        da, db = mx.grad(f, argnums=(0, 1))(mx.array(a), mx.array(b))
    # d/da = (mask_out @ (mask_b * b)^T) * mask_a, d/db = ((mask_a * a)^T @ mask_out) * mask_b, each
    # product of float32 operands (mask * operand rounded as MLX rounds it), then one more rounding.
    am, bm = (np.float64(x) for x in (as32(ma * a), as32(mb * b)))
    mo, ma, mb = (np.float64(x) for x in (mo, ma, mb))
    within_bound(da, (mo @ bm.T) * ma, ((n + 1) * U + PER_PRODUCT) * (np.abs(mo) @ np.abs(bm.T)) * ma)
    within_bound(db, (am.T @ mo) * mb, ((m + 1) * U + PER_PRODUCT) * (np.abs(am.T) @ np.abs(mo)) * mb)
