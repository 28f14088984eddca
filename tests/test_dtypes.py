"""float16 and bfloat16 operands, without a GPU: every op on the CPU fallback
(mx.matmul), and the GPU path's casts on a faked CUDA device (conftest's
fake_cuda, whose kernel is a float32 mx.matmul); layers through replace_linear."""

import logging

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx.utils import tree_flatten

import mlx_sgemm
from mlx_sgemm.dispatch.problem import OPERAND_DTYPES

from .test_autodiff import MLP

OPS = {"matmul": mlx_sgemm.matmul, **mlx_sgemm.ops.STAGE_OPS}
F32, F16, BF16 = mx.float32, mx.float16, mx.bfloat16
# Every pair of operand dtypes, and the dtype mx.matmul gives it (MLX 0.32).
PAIRS = {(F16, F16): F16, (BF16, BF16): BF16, (F16, F32): F32, (F32, F16): F32,
         (BF16, F32): F32, (F32, BF16): F32, (F16, BF16): F32, (BF16, F16): F32}
SHAPES = [((7, 5), (5, 3)), ((3, 1, 9, 13), (2, 13, 6)), ((13,), (2, 13, 6)), ((9, 13), (13,))]


def name(dtype):
    return str(dtype).rpartition(".")[2]


def operands(shape_a, shape_b, dtype_a, dtype_b):
    rng = np.random.default_rng(0)
    return (mx.array(rng.standard_normal(shape_a).astype(np.float32)).astype(dtype_a),
            mx.array(rng.standard_normal(shape_b).astype(np.float32)).astype(dtype_b))


def as_f64(x):
    return np.asarray(x.astype(F32), dtype=np.float64)  # numpy has no bfloat16


def test_result_dtypes_are_mx_matmuls():
    """The table above is what this MLX does (the ops follow mx.result_type)."""
    for (da, db), expected in PAIRS.items():
        a, b = operands((2, 3), (3, 4), da, db)
        assert mx.matmul(a, b, stream=mx.cpu).dtype == expected == mx.result_type(a, b)


@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{name(p[0])}@{name(p[1])}")
def test_cpu_fallback_is_mx_matmul_in_every_dtype(op_name, dtypes):
    for shape_a, shape_b in SHAPES:
        a, b = operands(shape_a, shape_b, *dtypes)
        got = OPS[op_name](a, b, stream=mx.cpu)
        expected = mx.matmul(a, b, stream=mx.cpu)
        assert got.dtype == expected.dtype == PAIRS[dtypes]
        assert mx.array_equal(got, expected).item()


@pytest.mark.parametrize("op_name", ["matmul", "tile_async"])
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{name(p[0])}@{name(p[1])}")
def test_gradients_come_back_in_the_operands_dtypes(op_name, dtypes):
    for shape_a, shape_b in SHAPES:
        a, b = operands(shape_a, shape_b, *dtypes)
        w = mx.random.normal(mx.matmul(a, b).shape)

        def loss(op):
            return lambda a, b: mx.sum(op(a, b).astype(F32) * w)

        ours = mx.grad(loss(OPS[op_name]), argnums=(0, 1))(a, b)
        ref = mx.grad(loss(mx.matmul), argnums=(0, 1))(a, b)
        for g, r, x in zip(ours, ref, (a, b)):
            assert g.dtype == x.dtype and g.shape == x.shape
            assert np.allclose(as_f64(g), as_f64(r), rtol=2e-2, atol=2e-2)


# ---- the GPU path, on a faked CUDA device ------------------------------------

@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{name(p[0])}@{name(p[1])}")
def test_kernels_get_float32_and_the_result_is_cast_once(fake_cuda, op_name, dtypes):
    """A half operand is cast to float32 whole, the kernel's float32 product is
    cast to mx.matmul's dtype: bit for bit what those steps give."""
    for shape_a, shape_b in SHAPES:
        a, b = operands(shape_a, shape_b, *dtypes)
        got = OPS[op_name](a, b)
        expected = mx.matmul(a.astype(F32), b.astype(F32)).astype(PAIRS[dtypes])
        assert got.dtype == PAIRS[dtypes] and got.shape == expected.shape
        assert mx.array_equal(got, expected).item()
    assert fake_cuda and all(launch.dtypes == (F32, F32) for launch in fake_cuda)


@pytest.mark.parametrize("dtypes", [(F16, F16), (BF16, F32), (F16, BF16)], ids=str)
def test_gradients_on_the_gpu_path(fake_cuda, dtypes):
    a, b = operands((6, 9), (9, 4), *dtypes)
    ops_grads = mx.grad(lambda a, b: mlx_sgemm.matmul(a, b).astype(F32).sum(), argnums=(0, 1))(a, b)
    ref = mx.grad(lambda a, b: mx.matmul(a, b).astype(F32).sum(), argnums=(0, 1))(a, b)
    for g, r, x in zip(ops_grads, ref, (a, b)):
        assert g.dtype == x.dtype
        assert np.allclose(as_f64(g), as_f64(r), rtol=2e-2, atol=2e-2)
    _, tangent = mx.jvp(mlx_sgemm.matmul, (a, b), (mx.ones_like(a), mx.ones_like(b)))
    assert tangent[0].dtype == PAIRS[dtypes]


def test_a_repeated_call_in_another_dtype_is_its_own_call(fake_cuda):
    """matmul remembers each call by its operands' dtypes too."""
    a, b = operands((5, 7), (7, 3), F32, F32)
    for dtype in (F32, F16, BF16, F32, F16):
        assert mlx_sgemm.matmul(a.astype(dtype), b.astype(dtype)).dtype == dtype


# ---- layers --------------------------------------------------------------------

def mlp(dtype):
    mx.random.seed(0)
    model = MLP()
    model.set_dtype(dtype)
    return model


@pytest.mark.parametrize("backend", ["cpu-fallback", "fake cuda"])
def test_bfloat16_mlp_forward_and_gradients(backend, request):
    launches = request.getfixturevalue("fake_cuda") if backend == "fake cuda" else None
    x = mx.random.normal((4, 12)).astype(BF16)
    y = mx.array([0, 1, 2, 3])
    ref, ours = mlp(BF16), mlx_sgemm.nn.replace_linear(mlp(BF16))
    assert all(isinstance(layer, mlx_sgemm.nn.Linear) for layer in ours.layers)
    out = ours(x)
    assert out.dtype == BF16
    assert np.allclose(as_f64(out), as_f64(ref(x)), rtol=3e-2, atol=3e-2)
    assert launches is None or {launch.dtypes for launch in launches} == {(F32, F32)}

    def loss(model, x, y):
        return nn.losses.cross_entropy(model(x).astype(F32), y).mean()

    value, grads = nn.value_and_grad(ours, loss)(ours, x, y)
    ref_value, ref_grads = nn.value_and_grad(ref, loss)(ref, x, y)
    assert abs(value.item() - ref_value.item()) < 3e-2
    for (path, g), (_, r) in zip(tree_flatten(grads), tree_flatten(ref_grads)):
        assert g.dtype == BF16, path
        assert np.allclose(as_f64(g), as_f64(r), rtol=5e-2, atol=5e-2), path


def test_replace_linear_leaves_quantized_and_other_dtypes_and_says_so(caplog, on_cpu):
    model = nn.Sequential(nn.Linear(64, 64), nn.QuantizedLinear(64, 64), nn.Linear(64, 8))
    model.layers[2].set_dtype(mx.float64)  # a dtype the ops do not take
    with caplog.at_level(logging.INFO, logger="mlx_sgemm"):
        mlx_sgemm.nn.replace_linear(model)
    assert isinstance(model.layers[0], mlx_sgemm.nn.Linear)
    assert type(model.layers[1]) is nn.QuantizedLinear
    assert type(model.layers[2]) is nn.Linear
    left = {r.getMessage() for r in caplog.records if r.name == "mlx_sgemm" and r.levelno == logging.INFO}
    assert any("layers.1 (QuantizedLinear)" in m and "quantized" in m for m in left), left
    assert any("layers.2 (Linear)" in m and "float64" in m for m in left), left
    assert len(left) == 2
    assert model(mx.ones((2, 64))).shape == (2, 8)  # the model still runs, mixed


def test_errors_in_a_swapped_layer_name_it():
    model = mlx_sgemm.nn.replace_linear(MLP())
    with pytest.raises(TypeError, match=r"^layers\.0 \(Linear\), x @ weight\.T: a must have dtype .*, got int32$"):
        model(mx.ones((4, 12), dtype=mx.int32))
    with pytest.raises(ValueError, match=r"^layers\.0 \(Linear\), x @ weight\.T: inner dimensions differ"):
        model(mx.ones((4, 11)))
    # A layer made by hand has no path: its errors are the op's own.
    with pytest.raises(TypeError, match=r"^a must have dtype"):
        mlx_sgemm.nn.Linear(3, 2)(mx.ones((1, 3), dtype=mx.int32))


def test_operand_dtypes_are_the_documented_three():
    assert OPERAND_DTYPES == (F32, F16, BF16)
