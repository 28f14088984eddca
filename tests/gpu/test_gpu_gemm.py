"""gemm on the GPU: alpha * (a @ b) + beta * c against float64, with c
broadcast, batched and unaligned shapes, NaN in c where beta = 0 (BLAS: c is
not read), half dtypes, and outputs poisoned with NaN before the kernels run.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

F32, F16, BF16 = mx.float32, mx.float16, mx.bfloat16
CASES = [  # a, b, c shapes
    ((1, 1), (1, 1), (1, 1)),
    ((7, 5), (5, 3), (3,)),
    ((127, 129), (129, 131), (127, 1)),
    ((3, 65, 33), (33, 17), (3, 65, 17)),
    ((513, 1025), (1025, 257), ()),
]


def normwise_error(out, a, b, c, alpha, beta):
    """||out - ref||_F / ||  |alpha| |a| |b| + |beta| |c|  ||_F, in float64."""
    a64, b64 = (np.array(x.astype(F32), np.float64) for x in (a, b))
    ref = alpha * (a64 @ b64)
    scale = abs(alpha) * (np.abs(a64) @ np.abs(b64))
    if beta != 0:
        c64 = np.array(c.astype(F32), np.float64)
        ref, scale = ref + beta * c64, scale + abs(beta) * np.abs(c64)
    out = np.array(out.astype(F32), np.float64)
    assert out.shape == ref.shape and np.isfinite(out).all(), "wrong shape, or NaN/Inf (an unwritten element?)"
    return np.linalg.norm(out - ref) / np.linalg.norm(np.broadcast_to(scale, ref.shape))


@pytest.mark.parametrize("precision", ["float32", "tf32"])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (-2.0, 0.5), (0.25, -3.0), (1.5, 0.0)])
@pytest.mark.parametrize("shapes", CASES, ids=str)
def test_alpha_beta(shapes, alpha, beta, precision):
    a, b = accuracy.random_operands(*shapes[:2])
    c = mx.random.normal(shapes[2])
    with mlx_sgemm.poisoned_outputs():
        out = mlx_sgemm.gemm(a, b, c, alpha=alpha, beta=beta, precision=precision)
    assert normwise_error(out, a, b, c, alpha, beta) < (2e-6 if precision == "float32" else 1e-3)


@pytest.mark.parametrize("beta", [0.0, mx.array(0.0)], ids=["float", "array"])
@pytest.mark.parametrize("shapes", CASES, ids=str)
def test_beta_zero_does_not_read_c(shapes, beta):
    a, b = accuracy.random_operands(*shapes[:2])
    c = mx.full(shapes[2], float("nan"))
    out = mlx_sgemm.gemm(a, b, c, alpha=2.0, beta=beta)
    assert normwise_error(out, a, b, c, 2.0, 0.0) < 2e-6


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_half_dtypes(dtype):
    a, b = accuracy.random_operands((129, 65), (65, 33))
    c = mx.random.normal((33,))
    a, b, c = a.astype(dtype), b.astype(dtype), c.astype(dtype)
    out = mlx_sgemm.gemm(a, b, c, alpha=1.5, beta=-0.5)
    assert out.dtype == dtype
    assert normwise_error(out, a, b, c, 1.5, -0.5) < (2.0**-10 if dtype == F16 else 2.0**-7)


def test_many_alphas_one_kernel():
    """alpha and beta are inputs: a new value each call costs no compile."""
    a, b = accuracy.random_operands((64, 64), (64, 64))
    c = mx.random.normal((64, 64))
    outs = [mlx_sgemm.gemm(a, b, c, alpha=1.0 + i / 1000, beta=i / 1000) for i in range(2000)]
    mx.eval(outs)
    assert normwise_error(outs[-1], a, b, c, 1.0 + 1999 / 1000, 1999 / 1000) < 2e-6


@pytest.mark.parametrize("m", [4, 300], ids=["few_rows", "many_rows"])  # small-M kernels and the pipelines
@pytest.mark.parametrize("precision", ["float32", "tf32"])
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_alpha_scales_the_float32_product_before_rounding(dtype, precision, m):
    """As mx.addmm: a @ b (102,400) is past float16's largest (65,504); alpha
    brings it to 12,800 before the one rounding to the result dtype."""
    a = mx.full((m, 512), 2.0, dtype=dtype)
    b = mx.full((250, 512), 100.0, dtype=dtype)
    c = mx.ones((m, 250), dtype=dtype)
    with mlx_sgemm.poisoned_outputs():
        out = mlx_sgemm.gemm(a, mx.swapaxes(b, -1, -2), c, alpha=0.125, beta=0.0, precision=precision)
    assert out.dtype == dtype
    assert mx.array_equal(out, mx.full((m, 250), 12800.0).astype(dtype))
    assert mx.array_equal(out, mx.addmm(c, a, mx.swapaxes(b, -1, -2), 0.125, 0.0))
