"""mx.vmap through the ops, without a GPU: the custom function's vmap rule
(ops._vmapped_product) on the CPU fallback and on a faked CUDA device whose
kernel is mx.matmul, against mx.vmap(mx.matmul); and MLX's limit that keeps
it from a real kernel."""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.build import launcher

OPS = {"matmul": mlx_sgemm.matmul, **mlx_sgemm.ops.STAGE_OPS}
V = 3  # examples

# (per-example a, per-example b, in_axes): where the mapped axis is inserted.
CASES = [
    ((4, 5), (5, 2), (0, 0)),
    ((4, 5), (5, 2), (0, None)),
    ((4, 5), (5, 2), (None, 0)),
    ((4, 5), (5, 2), (1, 2)),
    ((2, 4, 5), (5, 6), (2, 0)),  # a batched example against a matrix
    ((4, 5), (3, 5, 6), (0, None)),  # a matrix against an unmapped batch
    ((5,), (5, 2), (0, 0)),  # 1-D a per example
    ((5,), (2, 5, 2), (0, None)),
    ((4, 5), (5,), (1, 0)),  # 1-D b per example
    ((5,), (5,), (0, 0)),  # dot products
    ((5,), (5,), (None, 0)),
]


def mapped(shape, axis):
    """An array holding V examples of ``shape`` along ``axis`` (None: one example)."""
    shape = list(shape)
    if axis is not None:
        shape.insert(axis, V)
    return mx.array(np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32))


def close(x, y):
    assert x.shape == y.shape and x.dtype == y.dtype
    assert np.allclose(np.asarray(x.astype(mx.float32)), np.asarray(y.astype(mx.float32)), atol=1e-4)


@pytest.fixture(params=["cpu-fallback", "fake cuda"])
def backend(request, monkeypatch):
    """Where the ops run; counts the calls of the vmap rule."""
    if request.param == "fake cuda":
        request.getfixturevalue("fake_cuda")
    else:
        request.getfixturevalue("on_cpu")
    calls = []
    rule = ops._vmapped_product

    def counted(*args):
        calls.append(args[3:5])
        return rule(*args)

    monkeypatch.setattr(ops, "_vmapped_product", counted)
    return calls


@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("shape_a, shape_b, axes", CASES, ids=str)
def test_vmap_matches_mx_matmul(backend, op_name, shape_a, shape_b, axes):
    a, b = mapped(shape_a, axes[0]), mapped(shape_b, axes[1])
    got = mx.vmap(OPS[op_name], in_axes=axes)(a, b)
    close(got, mx.vmap(mx.matmul, in_axes=axes)(a, b))
    assert backend, "the custom function's vmap rule was not used"


@pytest.mark.parametrize("shape_a, shape_b, axes", CASES, ids=str)
def test_grad_of_a_vmapped_op(backend, shape_a, shape_b, axes):
    a, b = mapped(shape_a, axes[0]), mapped(shape_b, axes[1])

    def loss(op):
        return lambda a, b: mx.sum(mx.sin(mx.vmap(op, in_axes=axes)(a, b)))

    for got, want in zip(mx.grad(loss(mlx_sgemm.matmul), argnums=(0, 1))(a, b),
                         mx.grad(loss(mx.matmul), argnums=(0, 1))(a, b)):
        close(got, want)


def test_vmap_of_a_gradient(backend):
    a, b = mapped((4, 5), 0), mapped((5, 2), 0)

    def grad_of(op):
        return mx.vmap(mx.grad(lambda x, y: mx.sum(op(x, y) ** 2), argnums=(0, 1)))

    for got, want in zip(grad_of(mlx_sgemm.tile_16)(a, b), grad_of(mx.matmul)(a, b)):
        close(got, want)


def test_nested_vmap(backend):
    a = mx.random.normal((2, 4, 3, 5))  # (outer, per-example batch, rows, K)
    b = mx.random.normal((5, 2, 6))  # (K, outer, columns): mapped on axis 1 by the outer vmap
    inner_axes, outer_axes = (0, None), (0, 1)

    def nested(op):
        return mx.vmap(mx.vmap(op, in_axes=inner_axes), in_axes=outer_axes)

    close(nested(mlx_sgemm.tile_async)(a, b), nested(mx.matmul)(a, b))
    assert len(backend) >= 2  # the rule at both levels


def test_vmap_in_half_precision(backend):
    a, b = mapped((4, 5), 0).astype(mx.bfloat16), mapped((5, 2), None).astype(mx.float16)
    got = mx.vmap(mlx_sgemm.matmul, in_axes=(0, None))(a, b)
    assert got.dtype == mx.float32  # bfloat16 @ float16, as mx.matmul
    close(got, mx.vmap(mx.matmul, in_axes=(0, None))(a, b))


def test_one_product_serves_every_example(fake_cuda):
    """The rule folds the examples into the batch: the kernel's launch is of
    the whole (V, ...) product; against one b, of the examples' rows as one
    matrix (ops.folded_rows)."""
    a, b = mapped((4, 5), 0), mapped((5, 2), None)
    mx.eval(mx.vmap(mlx_sgemm.matmul, in_axes=(0, None))(a, b))
    assert ((V * 4, 5), (5, 2)) in {(launch.a_shape, launch.b_shape) for launch in fake_cuda}
    fake_cuda.clear()
    mx.eval(mx.vmap(mlx_sgemm.matmul, in_axes=(0, 0))(a, mapped((5, 2), 0)))
    assert ((V, 4, 5), (V, 5, 2)) in {(launch.a_shape, launch.b_shape) for launch in fake_cuda}


def test_a_kernel_without_a_vmap_stops_mx_vmap(fake_cuda, monkeypatch):
    """Why mx.vmap fails on Metal and CUDA (MLX 0.32, see mlx_sgemm.ops): MLX
    vectorizes the custom function's forward graph before it calls the
    function's rule, and a kernel node has no vmap. Here the kernel is a
    product with a primitive that has none either (QR); should MLX stop
    vectorizing the forward graph, this test fails, and vmap on the GPU works."""

    def prepared(spec, a_shape, b_shape, k_splits):
        def run(a, b, stream, extra):
            q = mx.linalg.qr(mx.ones((1, 1)) + a.reshape(-1)[:1], stream=mx.cpu)[0]
            return mx.matmul(a, b, stream=stream) + 0 * q
        return run

    monkeypatch.setattr(launcher, "prepared", prepared)
    a, b = mapped((4, 5), 0), mapped((5, 2), 0)
    close(mlx_sgemm.matmul(a, b), mx.matmul(a, b))  # the batch dimension instead: fine
    with pytest.raises(ValueError, match=r"\[Primitive::vmap\] Not implemented for QRF"):
        mx.vmap(mlx_sgemm.matmul)(a, b)
