"""On the GPU: transposed operands cost no copy; new shapes compile nothing."""

import mlx.core as mx
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy, timing
from mlx_sgemm.build import registry, specs
from mlx_sgemm.dispatch import kernel_choice

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]


@pytest.mark.parametrize("name", ["matmul", "tile_simdgroup", "tile_async"])
def test_x_times_w_transposed_costs_no_copy(name):
    """x @ W.T through the op within 5% of x @ (pre-transposed, contiguous W)."""
    op = getattr(mlx_sgemm, name)
    x, w = accuracy.random_operands((4096, 4096), (4096, 4096))
    w_t = mx.contiguous(w.T)
    mx.eval(x, w_t)
    with_view = timing.median_seconds(lambda: op(x, w.T), repeats=15)
    contiguous = timing.median_seconds(lambda: op(x, w_t), repeats=15)
    print(f"{name}: x @ W.T {with_view * 1e3:.2f} ms, x @ W_t {contiguous * 1e3:.2f} ms")
    assert with_view <= 1.05 * contiguous


def test_500_shapes_compile_no_more_kernels_than_variants():
    backend = mlx_sgemm.backend()
    ops = [mlx_sgemm.matmul, *mlx_sgemm.ops.STAGE_OPS.values()]
    before = registry.created()  # what earlier tests compiled (autotune's candidates too)
    for i in range(500):
        m, k, n = 1 + i % 37, 1 + (7 * i) % 41, 1 + (13 * i) % 43
        a, b = accuracy.random_operands((m, k), (k, n))
        mx.eval(ops[i % len(ops)](a, b))
    variants = set(specs.specs(backend)) | set(kernel_choice.variants(backend))
    assert registry.created() - before <= len(variants)
