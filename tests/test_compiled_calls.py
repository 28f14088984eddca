"""matmul's compiled per-shape calls (ops._compiled), without a GPU: the kernel
launch is faked with mx.matmul and counted; MLX's compile, the custom function
and its vjp are real."""

import sys

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm import ops
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device, tuning_cache


def operands(*shapes):
    return [mx.array(np.random.default_rng(i).standard_normal(s).astype(np.float32))
            for i, s in enumerate(shapes)]


def calls_that_ran_the_python(launches, fn, times=3):
    before = len(launches)
    for _ in range(times):
        assert np.allclose(fn(), fn.expected, atol=1e-5)
    return len(launches) - before


def product_of(a, b):
    fn = lambda: ops.matmul(a, b)  # noqa: E731
    fn.expected = mx.matmul(a, b)
    return fn


def test_repeated_calls_replay_without_the_python(fake_cuda):
    a, b = operands((5, 7), (7, 3))
    first = product_of(a, b)
    # MLX may run a function as written on a call or two while it compiles.
    assert 1 <= calls_that_ran_the_python(fake_cuda, first) <= 2
    assert calls_that_ran_the_python(fake_cuda, first) == 0
    assert {(launch.a_shape, launch.b_shape) for launch in fake_cuda} == {((5, 7), (7, 3))}
    other = product_of(*operands((2, 5, 7), (7, 4)))  # a new shape pair: traced anew
    assert calls_that_ran_the_python(fake_cuda, other) >= 1
    assert calls_that_ran_the_python(fake_cuda, other) == 0


def test_a_new_autotune_generation_or_poison_retraces(fake_cuda, monkeypatch):
    product = product_of(*operands((5, 7), (7, 3)))
    calls_that_ran_the_python(fake_cuda, product)
    assert calls_that_ran_the_python(fake_cuda, product) == 0
    monkeypatch.setattr(tuning_cache, "_generation", tuning_cache.generation() + 1)
    assert calls_that_ran_the_python(fake_cuda, product) >= 1
    with launcher.poisoned_outputs():
        assert calls_that_ran_the_python(fake_cuda, product) >= 1


def test_gradients_go_through_the_custom_function(fake_cuda):
    a, b = operands((5, 7), (7, 3))
    ops.matmul(a, b)  # compiled first: the transforms must not replay it
    grads = mx.grad(lambda x, y: ops.matmul(x, y).sum(), argnums=(0, 1))(a, b)
    expected = mx.grad(lambda x, y: mx.matmul(x, y).sum(), argnums=(0, 1))(a, b)
    for got, want in zip(grads, expected):
        assert np.allclose(got, want, atol=1e-5)
    _, tangent = mx.jvp(lambda x: ops.matmul(x, b), [a], [mx.ones_like(a)])
    assert np.allclose(tangent[0], mx.matmul(mx.ones_like(a), b), atol=1e-5)


def test_shape_errors_come_before_any_trace(fake_cuda):
    a, b = operands((5, 7), (6, 3))
    with pytest.raises(ValueError, match="7"):
        ops.matmul(a, b)
    assert fake_cuda == []


def test_an_empty_product_is_zeros(fake_cuda):
    a, b = operands((0, 7), (7, 3))
    assert ops.matmul(a, b).shape == (0, 3)
    a, b = operands((4, 0), (0, 3))
    assert np.array_equal(ops.matmul(a, b), np.zeros((4, 3), np.float32))


def test_a_repeated_call_still_checks_its_operands(fake_cuda):
    a, b = operands((5, 7), (7, 3))
    ops.matmul(a, b)
    ops.matmul(a, b)  # the shape pair is known now: the short path
    with pytest.raises(TypeError, match="a must have dtype float32, float16 or bfloat16, got int32"):
        ops.matmul(a.astype(mx.int32), b)
    with pytest.raises(TypeError, match="b must be an mlx.core.array"):
        ops.matmul(a, np.ones((7, 3), np.float32))


def test_a_repeated_call_follows_the_default_device(fake_cuda, monkeypatch):
    # A "kernel" whose results are marked (+1), to tell them from mx.matmul's.
    monkeypatch.setattr(launcher, "prepared", lambda spec, a_shape, b_shape, k_splits: (
        lambda a, b, stream, extra: mx.matmul(a, b, stream=stream) + 1))
    a, b = operands((5, 7), (7, 3))
    for _ in range(2):
        assert np.allclose(ops.matmul(a, b), mx.matmul(a, b) + 1, atol=1e-5)
    # The default device becomes the CPU (as mx.set_default_device(mx.cpu) on
    # a GPU machine): its default stream is another, which the remembered
    # calls are keyed by, and the backend is the CPU fallback.
    cpu_stream = device.canonical(mx.new_stream(mx.cpu))
    monkeypatch.setattr(device, "current_stream", lambda: cpu_stream)
    monkeypatch.setattr(device, "backend", lambda stream=None: device.CPU_FALLBACK)
    assert np.allclose(ops.matmul(a, b), mx.matmul(a, b), atol=1e-5)


def test_gradients_after_plain_calls_of_every_kind(fake_cuda):
    # The recorded graph is the kernel alone; a transform must still find the
    # custom function, also for an operand given as a transposed view.
    a, w = operands((5, 7), (3, 7))
    b = mx.swapaxes(w, 0, 1)
    for _ in range(2):
        ops.matmul(a, b)
    got = mx.grad(lambda y: ops.matmul(a, y).sum())(b)
    want = mx.grad(lambda y: mx.matmul(a, y).sum())(b)
    assert np.allclose(got, want, atol=1e-5)
    got = mx.vjp(lambda x: ops.matmul(x, b), [a], [mx.ones((5, 3))])[1][0]
    assert np.allclose(got, mx.ones((5, 3)) @ w, atol=1e-5)


def test_a_shape_met_first_inside_a_transform(fake_cuda):
    # Its compiled function is made (and its plain graph recorded from
    # stand-in operands) while the caller's own trace is open.
    a, b = operands((6, 7), (7, 2))
    step = mx.compile(lambda x, y: ops.matmul(x, y) * 2)
    assert np.allclose(step(a, b), 2 * mx.matmul(a, b), atol=1e-5)
    assert np.allclose(ops.matmul(a, b), mx.matmul(a, b), atol=1e-5)
    c, d = operands((3, 5), (5, 4))
    got = mx.grad(lambda x: ops.matmul(x, d).sum())(c)
    assert np.allclose(got, mx.grad(lambda x: mx.matmul(x, d).sum())(c), atol=1e-5)
    assert np.allclose(ops.matmul(c, d), mx.matmul(c, d), atol=1e-5)


def test_with_compile_disabled(fake_cuda):
    mx.disable_compile()
    try:
        a, b = operands((4, 9), (9, 5))
        for _ in range(2):
            assert np.allclose(ops.matmul(a, b), mx.matmul(a, b), atol=1e-5)
        got = mx.grad(lambda x: ops.matmul(x, b).sum())(a)
        assert np.allclose(got, mx.grad(lambda x: mx.matmul(x, b).sum())(a), atol=1e-5)
    finally:
        mx.enable_compile()


def test_calls_on_another_default_stream_replay_the_plain_recording(fake_cuda, monkeypatch):
    """MLX's compile traces a function anew under a default stream it has not
    recorded it for (mlx-lm generates on a stream of its own). Such a call
    must replay a recording of the kernel alone, as the default stream's calls
    do, not of the custom function (whose forward stops the operands' gradients)."""
    a, b = operands((5, 7), (7, 3))
    product = product_of(a, b)
    calls_that_ran_the_python(fake_cuda, product)
    stopped = []
    stop_gradient = mx.stop_gradient
    monkeypatch.setattr(mx, "stop_gradient", lambda x: stopped.append(x) or stop_gradient(x))
    with mx.stream(mx.new_stream(mx.default_device())):
        calls_that_ran_the_python(fake_cuda, product)
        assert calls_that_ran_the_python(fake_cuda, product) == 0
    assert stopped == []
    assert calls_that_ran_the_python(fake_cuda, product) == 0  # the default stream's recording is kept


@pytest.mark.parametrize("kernel, precision, deterministic", [
    ("matmul", "float32", False), ("matmul", "tf32", False), ("matmul", "float32", True),
    ("tile_async", "float32", False),
])
def test_a_layers_product_is_the_named_ops_call(fake_cuda, kernel, precision, deterministic):
    """mlx_sgemm.nn's layers take ops.layer_product: x @ w.T as the named op
    computes it with w.T a view (the same kernel choice, padding and operand
    shapes), recorded once with the transpose inside its graph, then replayed."""
    x, w = operands((3, 1000), (500, 1000))  # rows of 1000 floats: matmul pads them, the others do not
    op = lambda: ops.op_by_name(kernel, precision, deterministic)(x, w.T)  # noqa: E731
    product = ops.layer_product(kernel, precision, deterministic)
    layer = lambda: product(x, w)  # noqa: E731
    op.expected = layer.expected = mx.matmul(x, w.T)
    assert calls_that_ran_the_python(fake_cuda, op) >= 1
    ops_launches = set(fake_cuda)
    assert calls_that_ran_the_python(fake_cuda, layer) == 1  # its recording
    assert fake_cuda[-1] in ops_launches
    assert calls_that_ran_the_python(fake_cuda, layer) == 0


def layer_call(product, x, w):
    fn = lambda: product(x, w)  # noqa: E731
    fn.expected = mx.matmul(x, w.T)
    return fn


def test_a_layers_call_like_its_last_is_its_replay_alone(fake_cuda, monkeypatch):
    first_calls = []
    first_layer_call = ops._first_layer_call
    monkeypatch.setattr(ops, "_first_layer_call", lambda *args: first_calls.append(args) or first_layer_call(*args))
    product = ops.layer_product("matmul")
    x, w = operands((4, 9), (5, 9))
    for _ in range(3):
        assert np.allclose(product(x, w), mx.matmul(x, w.T), atol=1e-5)
    assert len(first_calls) == 1
    product(operands((2, 9))[0], w)
    product(x, w * 2)
    assert len(first_calls) == 3


def test_a_layers_call_unlike_its_last_is_checked_and_remembered(fake_cuda):
    product = ops.layer_product("matmul")
    x, w = operands((4, 9), (5, 9))
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w)) == 1
    # Another x shape: recorded once; then the first again (its function is kept).
    y = operands((2, 3, 9))[0]
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, y, w)) == 1
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w)) == 0
    # A new weight array of the same shape (a training step's): the same function, its values.
    w2 = w * 2
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w2)) == 0
    # A weight of another shape, or dtype: its own recording, right results.
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, operands((6, 9))[0])) == 1
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w.astype(mx.float16))) == 1
    # The poison flag and a new autotune generation are part of the call's state.
    with launcher.poisoned_outputs():
        assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w)) == 1
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w)) == 0


def test_a_layers_call_checks_its_operands_as_the_op_does(fake_cuda):
    product = ops.layer_product("matmul")
    x, w = operands((4, 9), (5, 9))
    product(x, w)
    with pytest.raises(TypeError, match="a must have dtype float32, float16 or bfloat16, got int32"):
        product(x.astype(mx.int32), w)
    with pytest.raises(TypeError, match="b must be an mlx.core.array"):
        product(x, np.ones((5, 9), np.float32))
    with pytest.raises(TypeError, match="a must be an mlx.core.array"):
        product(np.ones((4, 9), np.float32), w)  # x's shape as the last call's
    with pytest.raises(ValueError, match="9"):
        product(operands((4, 8))[0], w)
    with pytest.raises(ValueError, match="9"):
        product(x, operands((5, 8))[0])


def test_a_layer_does_not_keep_its_weight_alive(fake_cuda):
    product = ops.layer_product("matmul")
    x, w = operands((4, 9), (5, 9))
    before = sys.getrefcount(w)
    for _ in range(3):
        mx.eval(product(x, w))
    assert sys.getrefcount(w) == before


def test_a_layers_gradients_and_other_streams(fake_cuda, monkeypatch):
    product = ops.layer_product("matmul")
    x, w = operands((4, 9), (5, 9))
    for _ in range(2):
        product(x, w)
    got = mx.grad(lambda v: product(x, v).sum())(w)
    assert np.allclose(got, mx.grad(lambda v: mx.matmul(x, v.T).sum())(w), atol=1e-5)
    got = mx.grad(lambda v: product(v, w).sum())(x)
    assert np.allclose(got, mx.grad(lambda v: mx.matmul(v, w.T).sum())(x), atol=1e-5)
    stopped = []
    stop_gradient = mx.stop_gradient
    monkeypatch.setattr(mx, "stop_gradient", lambda a: stopped.append(a) or stop_gradient(a))
    with mx.stream(mx.new_stream(mx.default_device())):
        assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w)) >= 1
        assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w)) == 0
    assert stopped == []  # the plain recording: the kernel alone
    assert calls_that_ran_the_python(fake_cuda, layer_call(product, x, w)) == 0
