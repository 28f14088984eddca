"""The shapes launcher.prepared asks a kernel for, with a stand-in for the
kernel object (no GPU): the caller's shape where the kernel's output is that
memory already, so no reshape follows the kernel; the stacked partial
products where K is split."""

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.build import launcher, registry, specs


@pytest.fixture
def asked(monkeypatch):
    """Each call's output shapes; the stand-in multiplies what it is handed
    (batch dims merged as the plan merges them) into the first of them."""
    seen = []

    def kernel(spec):
        def run(inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream):
            a, b = (np.array(x) for x in inputs[:2])
            seen.append([tuple(s) for s in output_shapes])
            return [mx.array(np.matmul(a, b).reshape(output_shapes[0]).astype(np.float32))]
        return run

    monkeypatch.setattr(registry, "kernel", kernel)
    launcher.prepared.cache_clear()
    yield seen
    launcher.prepared.cache_clear()


@pytest.mark.parametrize("a_shape, b_shape, out", [
    ((1, 1, 64), (64, 48), (1, 1, 48)),  # a decode step's x @ W.T: the batch dims of size 1 merge away
    ((64,), (64, 48), (48,)),  # a 1-D operand's dim is dropped from the result
    ((2, 3, 5, 64), (64, 48), (2, 3, 5, 48)),
])
def test_the_kernel_writes_the_callers_shape(asked, a_shape, b_shape, out):
    spec = specs.spec("tile_threads", "cuda")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)
    c = launcher.prepared(spec, a_shape, b_shape, 1)(mx.array(a), mx.array(b), None, {})
    assert asked == [[out]] and c.shape == out
    np.testing.assert_allclose(np.array(c), np.matmul(a, b), rtol=1e-5, atol=1e-5)


@pytest.fixture
def handed(monkeypatch):
    """Each call's input and output shapes and grid; the stand-in multiplies
    x @ W.T as a kernel taking a layer's operands would (x at its own rank)."""
    seen = []

    def kernel(spec):
        def run(inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream):
            x, w = (np.array(v.astype(mx.float32)) for v in inputs[:2])
            seen.append(dict(inputs=[tuple(v.shape) for v in inputs[:2]], outputs=[tuple(s) for s in output_shapes],
                             blocks=grid[0] // threadgroup[0]))
            return [mx.array(np.matmul(x, w.T).reshape(output_shapes[0])).astype(output_dtypes[0])]
        return run

    monkeypatch.setattr(registry, "kernel", kernel)
    launcher.prepared.cache_clear()
    yield seen
    launcher.prepared.cache_clear()


@pytest.mark.parametrize("x_shape", [(1, 1, 64), (64,), (2, 3, 1, 64)], ids=str)
def test_a_layers_kernel_is_handed_x_and_w_as_they_are(handed, x_shape):
    """launcher.layer_call hands half_gemv_one_row x at its own rank and W
    itself (a layer's product: one node), a block for each row of x and tile
    of columns, C in x's leading shape; launch (matmul's a and b) hands it b's
    transposed view, which is W's layout again."""
    spec = specs.cuda_half_gemv_one_row("bfloat16")
    rng = np.random.default_rng(1)
    x = mx.array(rng.standard_normal(x_shape).astype(np.float32)).astype(mx.bfloat16)
    w = mx.array(rng.standard_normal((48, 64)).astype(np.float32)).astype(mx.bfloat16)
    rows = int(np.prod(x_shape[:-1]))
    c = launcher.layer_call(spec, x_shape, (48, 64))(x, w, None)
    again = launcher.launch(spec, x, w.T)
    out = (*x_shape[:-1], 48)
    assert handed == [dict(inputs=[x_shape, (48, 64)], outputs=[out], blocks=rows * 48 // spec.block_n)] * 2
    assert c.shape == again.shape == out and c.dtype == mx.bfloat16 and mx.array_equal(c, again)


def test_a_layers_kernel_refuses_what_a_layer_never_hands_it(handed):
    spec = specs.cuda_half_gemv_one_row("float16")
    with pytest.raises(ValueError, match=r"one 2-D b, unsplit; got b of shape \(3, 64, 48\)"):
        launcher.prepared(spec, (3, 1, 64), (3, 64, 48), 1)
    with pytest.raises(ValueError, match=r"x's last dimension is not W's"):
        launcher.layer_call(spec, (1, 63), (48, 64))
    assert handed == []
