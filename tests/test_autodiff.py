"""Gradients, transposed views, layers and mx.compile through every op.

These run everywhere: on a GPU the products are our kernels, on MLX's CPU
backend they are mx.matmul inside the same custom_function, so the gradient
plumbing (vjp/jvp, broadcast reductions, 1-D operands) is checked in CI too.
"""

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy

OPS = {"matmul": mlx_sgemm.matmul, **{s: getattr(mlx_sgemm, s) for s in mlx_sgemm.ops.STAGE_OPS}}

GRAD_SHAPES = [
    ((7, 5), (5, 3)),
    ((33, 17), (17, 65)),
    ((3, 1, 9, 13), (2, 13, 6)),  # broadcast both ways: gradients are reduced
    ((4, 9, 13), (13, 6)),  # b shared by the batch
    ((13,), (2, 13, 6)),  # 1-D a
    ((9, 13), (13,)),  # 1-D b
]


def close(x, y, rtol=2e-5):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    scale = np.abs(y).max() + 1e-30
    assert x.shape == y.shape
    assert np.abs(x - y).max() <= rtol * scale * np.sqrt(max(1, y.size)), np.abs(x - y).max() / scale


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("shapes", GRAD_SHAPES, ids=str)
def test_grad_matches_mx_matmul(name, shapes):
    a, b = accuracy.random_operands(*shapes)
    w = mx.random.normal(mx.matmul(a, b).shape)

    def loss(op):
        return lambda a, b: mx.sum(op(a, b) * w)

    ours = mx.grad(loss(OPS[name]), argnums=(0, 1))(a, b)
    ref = mx.grad(loss(mx.matmul), argnums=(0, 1))(a, b)
    for g, r, x in zip(ours, ref, (a, b)):
        assert g.shape == x.shape
        close(g, r)


@pytest.mark.parametrize("name", ["matmul", "tile_simdgroup"])
def test_vjp_jvp_and_second_order(name):
    op = OPS[name]
    a, b = accuracy.random_operands((6, 5), (5, 4))
    da, db = accuracy.random_operands((6, 5), (5, 4))
    _, tangent = mx.jvp(op, (a, b), (da, db))
    close(tangent[0], da @ b + a @ db)
    # With respect to one operand (MLX hands the other's tangent over as None).
    _, tangent = mx.jvp(lambda x: op(x, b), (a,), (da,))
    close(tangent[0], da @ b)
    _, tangent = mx.jvp(lambda y: op(a, y), (b,), (db,))
    close(tangent[0], a @ db)
    g = mx.random.normal((6, 4))
    _, (ga, gb) = mx.vjp(op, (a, b), (g,))
    close(ga, g @ b.T)
    close(gb, a.T @ g)
    # d/da of sum((a @ b)^2) differentiated again through our own vjp.
    hess = mx.grad(lambda a: mx.sum(mx.grad(lambda a: mx.sum(op(a, b) ** 2))(a)))(a)
    ref = mx.grad(lambda a: mx.sum(mx.grad(lambda a: mx.sum((a @ b) ** 2))(a)))(a)
    close(hess, ref)


@pytest.mark.parametrize("name", OPS)
def test_transposed_and_strided_views(name):
    op = OPS[name]
    a, b = accuracy.random_operands((37, 29), (29, 23))
    cases = {
        "NN": (a, b),
        "TN": (mx.array(np.ascontiguousarray(np.array(a).T)).T, b),
        "NT": (a, mx.array(np.ascontiguousarray(np.array(b).T)).T),
        "TT": (a.T.T, mx.swapaxes(mx.swapaxes(b, 0, 1), 0, 1)),
        "sliced": (mx.random.normal((80, 60))[3:77:2, 5:34], b),
        "broadcast": (mx.broadcast_to(a[:1], (37, 29)), b),
    }
    for label, (x, y) in cases.items():
        with mlx_sgemm.poisoned_outputs():
            got = op(x, y)
        assert accuracy.relative_error(got, x, y) < 1e-5, label


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(12, 32), nn.Linear(32, 5, bias=False)]

    def __call__(self, x):
        return self.layers[1](nn.relu(self.layers[0](x)))


def test_linear_is_a_drop_in(tmp_path):
    ref = nn.Linear(12, 7)
    ours = mlx_sgemm.nn.Linear(12, 7)
    assert isinstance(ours, nn.Linear) and ours.kernel == "matmul"
    assert set(dict(ours.parameters())) == set(dict(ref.parameters()))
    path = str(tmp_path / "w.safetensors")
    ref.save_weights(path)
    ours.load_weights(path)
    x = mx.random.normal((3, 4, 12))
    close(ours(x), ref(x))
    close(mlx_sgemm.nn.Linear(12, 7, kernel="tile_16").update(ref.parameters())(x), ref(x))
    with pytest.raises(ValueError, match="kernel must be one of"):
        mlx_sgemm.nn.Linear(2, 2, kernel="cublas")


def test_replace_linear_swaps_every_layer_and_keeps_outputs():
    model = MLP()
    x = mx.random.normal((4, 12))
    before = model(x)
    mlx_sgemm.nn.replace_linear(model, kernel="tile_threads")
    assert all(isinstance(l, mlx_sgemm.nn.Linear) for l in model.layers)
    assert model.layers[1].kernel == "tile_threads" and "bias" not in model.layers[1]
    close(model(x), before)


def test_compiled_training_step():
    mx.random.seed(0)  # the model's init and the data: a run that can be repeated
    model = MLP()
    mlx_sgemm.nn.replace_linear(model)
    x, y = mx.random.normal((16, 12)), mx.random.randint(0, 5, (16,))
    import mlx.optimizers as optim

    opt = optim.SGD(learning_rate=0.1)
    loss_and_grad = nn.value_and_grad(model, lambda m, x, y: nn.losses.cross_entropy(m(x), y).mean())
    state = [model.state, opt.state]

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    step = mx.compile(step, inputs=state, outputs=state)
    # 100 steps of SGD on 16 samples: the loss falls to 0.08-0.19 of its start
    # over 20 seeds (30 steps: 0.42-0.73, too close to a bound to be a test).
    losses = [step(x, y).item() for _ in range(100)]
    assert losses[-1] < 0.5 * losses[0]

    compiled = mx.compile(lambda a, b: mlx_sgemm.tile_simdgroup(a, b) * 2)
    a, b = accuracy.random_operands((9, 8), (8, 7))
    close(compiled(a, b), 2 * (a @ b))


@pytest.mark.parametrize("name", OPS)
def test_shapeless_compile_is_refused_by_mlx(name):
    """MLX 0.32 cannot infer the output shapes of a custom function's node (nor
    of a custom kernel's): a function compiled with shapeless=True raises MLX's
    ValueError at its first call, from mx.compile's own code (mlx_sgemm.ops
    says why). Compiled with shapes, each new shape is a trace of its own."""
    op = OPS[name]
    a, b = accuracy.random_operands((4, 5), (5, 3))
    shapeless = mx.compile(lambda a, b: op(a, b) * 2, shapeless=True)
    with pytest.raises(ValueError, match="cannot infer output shapes"):
        shapeless(a, b)
    compiled = mx.compile(lambda a, b: op(a, b) * 2)
    for x, y in ((a, b), accuracy.random_operands((2, 6, 5), (5, 7)), (a, b)):
        close(compiled(x, y), 2 * (x @ y))


@pytest.mark.parametrize("shape_c", [(5,), (3, 1), (3, 5), ()])
def test_gemm_alpha_beta_and_gradients(shape_c):
    a, b = accuracy.random_operands((3, 4), (4, 5))
    c = mx.random.normal(shape_c)
    close(mlx_sgemm.gemm(a, b, c, alpha=2.0, beta=-0.5), 2 * (a @ b) - 0.5 * c)
    grads = mx.grad(lambda a, b, c: mx.sum(mlx_sgemm.gemm(a, b, c, alpha=2.0, beta=3.0) ** 2), argnums=(0, 1, 2))(a, b, c)
    ref = mx.grad(lambda a, b, c: mx.sum((2 * (a @ b) + 3 * c) ** 2), argnums=(0, 1, 2))(a, b, c)
    for g, r in zip(grads, ref):
        close(g, r)


def test_gemm_errors_name_c():
    a, b = accuracy.random_operands((3, 4), (4, 5))
    with pytest.raises(ValueError, match=r"c \(4,\) does not broadcast"):
        mlx_sgemm.gemm(a, b, mx.ones((4,)), beta=1.0)
    with pytest.raises(ValueError, match="c is required"):
        mlx_sgemm.gemm(a, b, beta=1.0)
    with pytest.raises(TypeError, match="c must be"):
        mlx_sgemm.gemm(a, b, [1.0] * 5, beta=1.0)


@pytest.mark.parametrize(
    "shape_a, shape_b, shape_c",
    [((2, 3, 4, 5), (2, 3, 5, 6), (3, 1, 6)), ((3, 1, 4, 5), (2, 5, 6), (2, 1, 6)), ((5,), (2, 5, 6), (2, 1)),
     ((4, 5), (5,), ())],
)
def test_gemm_c_input_matches_the_kernel_output_layout(shape_a, shape_b, shape_c):
    """The fused gemm reads C in the kernel's output layout (merged batch dims)."""
    from mlx_sgemm.build.launcher import as_kernel_output
    from mlx_sgemm.dispatch.problem import plan

    p = plan(shape_a, shape_b)
    c = mx.random.normal(shape_c)
    laid_out = as_kernel_output(c, p)
    assert laid_out.shape == p.kernel_out_shape()
    # Element for element, the kernel layout holds C broadcast to a @ b's shape.
    expected = np.broadcast_to(np.array(c), p.out_shape)
    np.testing.assert_array_equal(np.array(laid_out).reshape(p.out_shape), expected)
