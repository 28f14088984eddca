"""gemm's contract without a GPU: BLAS's beta = 0 (c not read), alpha and beta
as kernel inputs (nothing built per value), dtypes, errors.

On the CPU fallback gemm is MLX element-wise ops around the product; on a
faked Metal GPU (conftest.fake_metal) the Python path to the fused kernel
runs for real and the kernel's store is computed as its epilogue is written.
The Metal kernel itself is checked by the CPU harness (tests/metal/
test_metal_tile_async.py, beta = 0 included); on CUDA by tests/gpu/test_gpu_gemm.py.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import registry

F32, F16, BF16 = mx.float32, mx.float16, mx.bfloat16


def reference(a, b, c, alpha, beta):
    a64, b64 = np.array(a.astype(F32), np.float64), np.array(b.astype(F32), np.float64)
    out = alpha * (a64 @ b64)
    return out if beta == 0 else out + beta * np.array(c.astype(F32), np.float64)


def close(x, ref, tol=1e-5):
    x = np.array(x.astype(F32), np.float64)
    assert x.shape == ref.shape
    assert np.isfinite(x).all(), "NaN or Inf in the result"
    assert np.abs(x - ref).max() <= tol * (1 + np.abs(ref).max())


@pytest.fixture(params=["cpu_fallback", "metal", "cuda"])
def backend(request):
    """Each test on the CPU fallback and on the faked Metal and CUDA GPUs."""
    if request.param != "cpu_fallback":
        request.getfixturevalue(f"fake_{request.param}")
    ops._fused_gemm.cache_clear()
    yield request.param
    ops._fused_gemm.cache_clear()


@pytest.mark.parametrize("beta", [0.0, 0, mx.array(0.0)], ids=["float", "int", "array"])
def test_beta_zero_does_not_read_c(backend, beta):
    a, b = accuracy.random_operands((5, 7), (7, 3))
    c = mx.full((5, 3), float("nan"))
    close(mlx_sgemm.gemm(a, b, c, alpha=2.0, beta=beta), reference(a, b, c, 2.0, 0.0))
    c = mx.full((3,), float("inf"))  # broadcast c too
    close(mlx_sgemm.gemm(a, b, c, alpha=-1.0, beta=beta), reference(a, b, c, -1.0, 0.0))


def test_ten_thousand_alphas_build_nothing_new(backend):
    """A training loop with a new alpha (and beta) every step: no kernel,
    custom function or cached object per value."""
    a, b = accuracy.random_operands((4, 8), (8, 4))
    c = mx.random.normal((4, 4))
    kernels_before = registry.kernel.cache_info().currsize
    outs = []
    for i in range(10_000):
        alpha, beta = 1.0 + i * 1e-4, -0.5 + i * 1e-5
        outs.append(mlx_sgemm.gemm(a, b, c, alpha=alpha, beta=beta))
        if i % 1000 == 999:
            mx.eval(outs)
            close(outs[-1], reference(a, b, c, alpha, beta))
            outs = []
    assert ops._fused_gemm.cache_info().currsize <= 1
    assert registry.kernel.cache_info().currsize <= kernels_before + 1


@pytest.mark.parametrize("alpha,beta", [(mx.array(2.0), mx.array(-0.5)), (mx.array([3.0]), 1.0)])
def test_alpha_and_beta_as_arrays(backend, alpha, beta):
    a, b = accuracy.random_operands((3, 6), (6, 5))
    c = mx.random.normal((3, 5))
    close(mlx_sgemm.gemm(a, b, c, alpha=alpha, beta=beta), reference(a, b, c, alpha.item(), float(np.array(beta))))


@pytest.mark.parametrize("dtypes", [(F16, F16, F16), (BF16, BF16, BF16), (BF16, F32, BF16), (F16, F16, F32)])
def test_half_dtypes(backend, dtypes):
    """The result has the dtype alpha * (a @ b) + beta * c has in MLX."""
    a, b = accuracy.random_operands((6, 9), (9, 4))
    c = mx.random.normal((6, 4))
    a, b, c = (x.astype(d) for x, d in zip((a, b, c), dtypes))
    out = mlx_sgemm.gemm(a, b, c, alpha=1.5, beta=0.25)
    assert out.dtype == (1.5 * (a @ b) + 0.25 * c).dtype
    close(out, reference(a, b, c, 1.5, 0.25), tol=1e-2)


@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_alpha_scales_the_float32_product_before_rounding(backend, dtype, beta):
    """As mx.addmm: a @ b is 102,400, past float16's largest (65,504); alpha
    brings it back to 12,800, and only then is it rounded to the result dtype."""
    a = mx.full((4, 512), 2.0, dtype=dtype)
    b = mx.full((250, 512), 100.0, dtype=dtype)
    c = mx.ones((4, 250), dtype=dtype)
    out = mlx_sgemm.gemm(a, mx.swapaxes(b, -1, -2), c, alpha=0.125, beta=beta)
    assert out.dtype == dtype
    rounded_once = mx.full((4, 250), 12800.0 + beta).astype(dtype)
    assert mx.array_equal(out, rounded_once)
    assert mx.array_equal(out, mx.addmm(c, a, mx.swapaxes(b, -1, -2), 0.125, beta))


def test_beta_times_c_is_not_rounded_to_half_first(backend):
    """beta * c and its sum with the product in float32, rounded once: 60,000 * 2
    alone would overflow float16, 120,000 - 100,000 does not."""
    a = mx.full((2, 1), -100.0, dtype=F16)
    b = mx.full((1, 2), 1000.0, dtype=F16)
    c = mx.full((2, 2), 60000.0, dtype=F16)
    out = mlx_sgemm.gemm(a, b, c, alpha=1.0, beta=mx.array(2.0, dtype=F16))
    assert np.array_equal(np.array(out.astype(F32)), np.full((2, 2), 20000.0, np.float32))


def test_gradients_through_the_fused_store(backend):
    a, b = accuracy.random_operands((3, 4), (4, 5))
    c = mx.random.normal((5,))
    f = lambda a, b, c: mx.sum(mlx_sgemm.gemm(a, b, c, alpha=mx.array(2.0), beta=3.0) ** 2)  # noqa: E731
    ref = lambda a, b, c: mx.sum((2 * (a @ b) + 3 * c) ** 2)  # noqa: E731
    for g, r in zip(mx.grad(f, argnums=(0, 1, 2))(a, b, c), mx.grad(ref, argnums=(0, 1, 2))(a, b, c)):
        close(g, np.array(r, np.float64), tol=1e-4)


@pytest.mark.parametrize("bad,message", [
    (dict(alpha="2"), "alpha must be a number"),
    (dict(beta=mx.ones((2,))), r"beta must be a number or a one-element real array, got shape \(2,\)"),
    (dict(alpha=True), "alpha must be a number"),
])
def test_bad_scalars_are_named(bad, message):
    a, b = accuracy.random_operands((2, 2), (2, 2))
    with pytest.raises(TypeError, match=message):
        mlx_sgemm.gemm(a, b, mx.zeros((2, 2)), **bad)


def test_c_of_an_integer_dtype_is_named():
    a, b = accuracy.random_operands((2, 2), (2, 2))
    with pytest.raises(TypeError, match="c must have dtype float32, float16 or bfloat16, got int32"):
        mlx_sgemm.gemm(a, b, mx.zeros((2, 2), dtype=mx.int32), beta=1.0)
