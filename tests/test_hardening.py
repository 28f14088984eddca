"""Nothing a user passes makes an op silently wrong or crashes the process.

Validation runs everywhere (CPU included); the numerical checks on the GPU.
"""

import time

import mlx.core as mx
import mlx.nn
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlx_sgemm
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import registry

from .conftest import requires_gpu

OPS = {"matmul": mlx_sgemm.matmul, **mlx_sgemm.ops.STAGE_OPS}
OP_LIST = list(OPS.values())


# ---- validation: CPU and GPU ---------------------------------------------------

@pytest.mark.parametrize("op", OP_LIST, ids=list(OPS))
@pytest.mark.parametrize(
    "shape_a, shape_b, out",
    [((0, 5), (5, 3), (0, 3)), ((4, 5), (5, 0), (4, 0)), ((2, 0, 4, 5), (5, 3), (2, 0, 4, 3))],
)
def test_zero_size_gives_empty_result(op, shape_a, shape_b, out):
    c = op(mx.zeros(shape_a), mx.zeros(shape_b))
    assert c.shape == out and c.dtype == mx.float32


@pytest.mark.parametrize("op", OP_LIST, ids=list(OPS))
def test_k_zero_gives_zeros(op):
    c = op(mx.zeros((4, 0)), mx.zeros((0, 3)))
    assert c.shape == (4, 3) and not mx.any(c).item()
    assert op(mx.zeros((0,)), mx.zeros((0,))).shape == ()


@pytest.mark.parametrize("op", OP_LIST, ids=list(OPS))
def test_non_broadcastable_batch_names_both_shapes(op):
    with pytest.raises(ValueError, match=r"\(2, 3, 4\).*\(3, 4, 5\)"):
        op(mx.ones((2, 3, 4)), mx.ones((3, 4, 5)))


def test_bad_precision():
    with pytest.raises(ValueError, match="precision must be one of"):
        mlx_sgemm.matmul(mx.ones((2, 2)), mx.ones((2, 2)), precision="fp16")


@pytest.mark.parametrize("call", [
    lambda flag: mlx_sgemm.matmul(mx.ones((2, 2)), mx.ones((2, 2)), deterministic=flag),
    lambda flag: mlx_sgemm.nn.Linear(2, 2, deterministic=flag),
    lambda flag: mlx_sgemm.nn.replace_linear(mlx.nn.Sequential(mlx.nn.Linear(2, 2)), deterministic=flag),
    lambda flag: mlx_sgemm.explain((2, 2), (2, 2), deterministic=flag),
    lambda flag: mlx_sgemm.explain((2, 2), (2, 2), b_transposed=flag),
    lambda flag: mlx_sgemm.explain((2, 2), (2, 2), wgmma=flag),
], ids=["matmul", "Linear", "replace_linear", "explain", "explain_b_transposed", "explain_wgmma"])
@pytest.mark.parametrize("flag", ["yes", 1, None])
def test_a_flag_that_is_not_a_bool_is_named(call, flag):
    with pytest.raises(TypeError, match=r"^(deterministic|b_transposed|wgmma) must be True or False, got "):
        call(flag)


@pytest.mark.parametrize("call,allowed", [
    (lambda: mlx_sgemm.nn.Linear(2, 2, precision="fp32"), r"precision must be one of \('float32', 'tf32'\)"),
    (lambda: mlx_sgemm.nn.replace_linear(mlx.nn.Linear(2, 2), precision="half"), "precision must be one of"),
    (lambda: mlx_sgemm.nn.Linear(2, 2, kernel="fast"), r"kernel must be one of \('matmul', 'naive'"),
    (lambda: mlx_sgemm.gemm(mx.ones((2, 2)), mx.ones((2, 2)), precision="x"), "precision must be one of"),
    (lambda: mlx_sgemm.explain((2, 2), (2, 2), backend="rocm"), "backend must be 'cuda', 'metal' or None"),
    (lambda: mlx_sgemm.explain((2, 2), (2, 2), dtype="int8"), "dtype must be one of"),
], ids=["Linear_precision", "replace_linear_precision", "Linear_kernel", "gemm_precision", "explain_backend",
        "explain_dtype"])
def test_an_enumerated_argument_lists_its_values(call, allowed):
    with pytest.raises(ValueError, match=allowed):
        call()


def test_precision_reaches_every_layer_replace_linear_makes():
    model = mlx.nn.Sequential(mlx.nn.Linear(4, 3), mlx.nn.Linear(3, 2))
    mlx_sgemm.nn.replace_linear(model, precision="tf32")
    assert [layer.precision for layer in model.layers] == ["tf32", "tf32"]
    assert "precision='tf32'" in repr(model.layers[0])
    x = mx.random.normal((5, 4))
    assert mx.allclose(model(x), model.layers[1](model.layers[0](x)))


dims = st.integers(min_value=0, max_value=5)


@settings(max_examples=150, deadline=None)
@given(
    a=st.lists(dims, min_size=0, max_size=4), b=st.lists(dims, min_size=0, max_size=4),
    dtype=st.sampled_from([mx.float32, mx.float16, mx.bfloat16, mx.int32]),
)
def test_validation_agrees_with_mx_matmul(a, b, dtype):
    """Every shape mx.matmul rejects, we reject; every one it accepts, we accept,
    with its result dtype. Integer operands are a TypeError (mx.matmul would
    promote one against a float operand)."""
    x, y = mx.zeros(a, dtype=dtype), mx.zeros(b, dtype=mx.float32)
    try:
        expected = mx.matmul(x.astype(mx.float32), y).shape
    except (ValueError, RuntimeError):
        expected = None
    if dtype == mx.int32:
        with pytest.raises(TypeError, match="a must have dtype float32, float16 or bfloat16, got int32"):
            mlx_sgemm.matmul(x, y)
        return
    if expected is None:
        with pytest.raises(ValueError):
            mlx_sgemm.matmul(x, y)
    else:
        c = mlx_sgemm.matmul(x, y, stream=mx.cpu)
        assert c.shape == tuple(expected) and c.dtype == mx.float32


def test_cpu_stream_uses_the_fallback_bit_for_bit():
    a, b = accuracy.random_operands((33, 17), (17, 9))
    expected = mx.matmul(a, b, stream=mx.cpu)
    for op in OP_LIST:
        assert mx.array_equal(op(a, b, stream=mx.cpu), expected).item()


# ---- numerics on the GPU -------------------------------------------------------

@requires_gpu
@pytest.mark.parametrize("name", OPS)
def test_nan_and_inf_land_where_mx_matmul_puts_them(name):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 70)).astype(np.float32)
    # Integers are exact in TF32: their small parts are 0, the case where a
    # careless 3xTF32 split turns Inf * 0 into NaN.
    b = rng.integers(-3, 4, (70, 50)).astype(np.float32)
    a[3, 5] = np.inf
    a[7, 9] = -np.inf
    a[11, 2] = np.nan
    a[20, 30] = np.inf
    a[20, 31] = -np.inf  # inf - inf in one dot product: NaN
    b[40, 17] = np.inf
    b[41, 18] = np.nan
    ours = np.array(OPS[name](mx.array(a), mx.array(b)))
    ref = np.array(mx.matmul(mx.array(a), mx.array(b)))
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(ref))
    assert np.isnan(ref).any() and np.isinf(ref).any()


@requires_gpu
@pytest.mark.parametrize("name", OPS)
def test_long_k_stays_float32_accurate(name):
    a, b = accuracy.random_operands((8, 2**20), (2**20, 8))
    err = accuracy.relative_error(OPS[name](a, b), a, b)
    base = accuracy.relative_error(mx.matmul(a, b), a, b)
    assert err <= 4 * max(base, 2.0**-24), (err, base)


@requires_gpu
@pytest.mark.parametrize("name", ["matmul", "naive", "tile_async"])
def test_output_beyond_2_31_elements(name):
    m = n = 46341  # m * n > 2**31
    a, b = accuracy.random_operands((m, 16), (16, n))
    c = OPS[name](a, b)
    mx.eval(c)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(m, 64, replace=False))
    cols = np.sort(rng.choice(n, 64, replace=False))
    rows = np.concatenate([rows, [m - 1]])
    cols = np.concatenate([cols, [n - 1]])
    got = np.array(c[mx.array(rows)][:, mx.array(cols)])
    ref = np.array(a, np.float64)[rows] @ np.array(b, np.float64)[:, cols]
    scale = np.abs(np.array(a, np.float64)[rows]) @ np.abs(np.array(b, np.float64)[:, cols])
    assert np.all(np.abs(got - ref) <= 1e-5 * scale)
    del c


@requires_gpu
def test_explicit_gpu_stream_is_honoured():
    s = mx.new_stream(mx.gpu)
    a, b = accuracy.random_operands((65, 33), (33, 17))
    for op in OP_LIST:
        c = op(a, b, stream=s)
        assert accuracy.relative_error(c, a, b) < 1e-6


@requires_gpu
def test_long_run_memory_flat_and_nothing_new_compiled():
    shapes = [(m, k, n) for m in (1, 7, 64, 129) for k in (3, 64, 200) for n in (1, 33, 128)]
    operands = [accuracy.random_operands((m, k), (k, n)) for m, k, n in shapes]
    mx.eval(operands)
    for a, b in operands:  # warm-up: every kernel compiled once
        mx.eval([op(a, b) for op in OP_LIST])
    created = registry.created()
    mx.synchronize()
    before = mx.get_active_memory()
    start = time.perf_counter()
    calls = 0
    while calls < 10_000:
        for a, b in operands:
            mx.eval(OP_LIST[calls % len(OP_LIST)](a, b))
            calls += 1
    mx.synchronize()
    after = mx.get_active_memory()
    assert registry.created() == created
    assert abs(after - before) <= 0.01 * before, (before, after)
    # No compilation after warm-up: a JIT compile takes ~100 ms, a call far less.
    assert (time.perf_counter() - start) / calls < 0.005


@requires_gpu
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 70),
    batch_a=st.sampled_from([(), (1,), (3,), (2, 1)]),
    batch_b=st.sampled_from([(), (3,), (1, 3)]),
    trans_a=st.booleans(), trans_b=st.booleans(),
    name=st.sampled_from(list(OPS)),
)
def test_property_random_shapes_layouts_stages(m, n, k, batch_a, batch_b, trans_a, trans_b, name):
    a, b = accuracy.random_operands((*batch_a, m, k), (*batch_b, k, n))
    if trans_a:
        a = mx.swapaxes(mx.contiguous(mx.swapaxes(a, -1, -2)), -1, -2)
    if trans_b:
        b = mx.swapaxes(mx.contiguous(mx.swapaxes(b, -1, -2)), -1, -2)
    with mlx_sgemm.poisoned_outputs():
        c = OPS[name](a, b)
    err = accuracy.relative_error(c, a, b)
    base = accuracy.relative_error(mx.matmul(a, b), a, b)
    assert err <= 4 * max(base, 2.0**-24)
