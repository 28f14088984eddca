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
