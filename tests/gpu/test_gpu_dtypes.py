"""float16 and bfloat16 operands on every stage, against a float64 reference, on the GPU.

The operands are fresh random values in the half type (so float64 holds them
exactly); outputs are poisoned with NaN before the kernel runs. A half result
may be off by its own rounding of the float32 product (unit roundoff 2**-11 for
float16, 2**-8 for bfloat16) plus the float32 product's error; a float32
result (mixed operands) by a float32 product's error alone.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import specs

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

F32, F16, BF16 = mx.float32, mx.float16, mx.bfloat16
UNIT_ROUNDOFF = {F16: 2.0**-11, BF16: 2.0**-8, F32: 0.0}
# A float32 product's error, normwise (bench.accuracy's measure): float32 FMAs
# and 3xTF32 land near 1e-7 on these sizes; test_gpu_ops bounds them tighter.
FLOAT32_ERROR = 2.0**-18
# (operand dtypes) -> result dtype, as mx.matmul (mx.result_type).
PAIRS = {(F16, F16): F16, (BF16, BF16): BF16, (F16, F32): F32, (F32, BF16): F32, (BF16, F16): F32}
OPS = [*specs.STAGES, "matmul"]
SHAPES = [(1, 1, 1), (7, 5, 3), (33, 65, 17), (127, 129, 131), (513, 257, 1025), (20, 300, 1000)]


def name(dtype):
    return str(dtype).rpartition(".")[2]


def half_operands(shape_a, shape_b, dtype_a, dtype_b):
    a, b = accuracy.random_operands(shape_a, shape_b)
    return a.astype(dtype_a), b.astype(dtype_b)


def check(op, a, b):
    with mlx_sgemm.poisoned_outputs():
        c = op(a, b)
    expected = mx.matmul(a, b)
    assert c.shape == expected.shape and c.dtype == expected.dtype
    # numpy has no bfloat16: compare in float32, which holds every half value.
    err = accuracy.relative_error(c.astype(F32), a.astype(F32), b.astype(F32))
    assert err <= UNIT_ROUNDOFF[c.dtype] + FLOAT32_ERROR, f"error {err:.3e} for a {c.dtype} result"
    return c


@pytest.mark.parametrize("stage", OPS)
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{name(p[0])}@{name(p[1])}")
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_stage_in_half_precision(stage, dtypes, mnk):
    m, n, k = mnk
    a, b = half_operands((m, k), (k, n), *dtypes)
    c = check(getattr(mlx_sgemm, stage), a, b)
    assert c.dtype == PAIRS[dtypes]


@pytest.mark.parametrize("stage", OPS)
@pytest.mark.parametrize(
    "shape_a, shape_b",
    [((3, 1, 33, 17), (2, 17, 65)), ((33,), (2, 33, 7)), ((4, 65, 33), (33,)), ((129,), (129,))],
    ids=str,
)
def test_stage_broadcasts_in_half_precision(stage, shape_a, shape_b):
    for dtypes in ((F16, F16), (BF16, BF16), (BF16, F32)):
        check(getattr(mlx_sgemm, stage), *half_operands(shape_a, shape_b, *dtypes))


@pytest.mark.parametrize("stage", ["matmul", "tile_async"])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=name)
def test_transposed_weight_in_half_precision(stage, dtype):
    """x @ W.T with W a half array: the transposed view is cast, then read in place."""
    x, w = half_operands((2, 520, 1030), (515, 1030), dtype, dtype)
    check(getattr(mlx_sgemm, stage), x, w.T)


@pytest.mark.parametrize("stage", ["matmul", "tile_simdgroup"])
@pytest.mark.parametrize("dtypes", [(F16, F16), (BF16, BF16), (BF16, F32)], ids=str)
def test_gradients_in_half_precision(stage, dtypes):
    a, b = half_operands((33, 65), (65, 17), *dtypes)
    w = mx.random.normal((33, 17))
    op = getattr(mlx_sgemm, stage)
    da, db = mx.grad(lambda a, b: mx.sum(op(a, b).astype(F32) * w), argnums=(0, 1))(a, b)
    assert da.dtype == a.dtype and db.dtype == b.dtype
    a64, b64 = (np.asarray(x.astype(F32), np.float64) for x in (a, b))
    w64 = np.asarray(w, np.float64)
    for g, ref, rows, cols in ((da, w64 @ b64.T, w64, b64.T), (db, a64.T @ w64, a64.T, w64)):
        g64 = np.asarray(g.astype(F32), np.float64)
        scale = np.linalg.norm(np.abs(rows) @ np.abs(cols))
        # The cotangent passes through the result dtype once, the product once more.
        bound = 2 * max(UNIT_ROUNDOFF[x.dtype] for x in (a, b)) + FLOAT32_ERROR
        assert np.linalg.norm(g64 - ref) <= bound * scale


@pytest.mark.parametrize("dtype", [F16, BF16], ids=name)
def test_layer_in_half_precision(dtype):
    layer = mlx_sgemm.nn.Linear(96, 40)
    layer.set_dtype(dtype)
    x = mx.random.normal((3, 5, 96)).astype(dtype)
    with mlx_sgemm.poisoned_outputs():
        y = layer(x)
    assert y.dtype == dtype
    ref = x.astype(F32) @ layer.weight.astype(F32).T + layer.bias.astype(F32)
    scale = np.abs(np.asarray(x.astype(F32))) @ np.abs(np.asarray(layer.weight.astype(F32))).T
    diff = np.abs(np.asarray(y.astype(F32)) - np.asarray(ref))
    # The product's rounding to the half type, and the bias add's.
    assert np.all(diff <= 2 * UNIT_ROUNDOFF[dtype] * (scale + np.abs(np.asarray(ref))) + 1e-6)
