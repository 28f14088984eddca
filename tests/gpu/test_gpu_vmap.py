"""mx.vmap over the ops on the GPU: refused by MLX 0.32, and what to do instead.

MLX vectorizes every node of a custom function's forward graph before it
calls the function's own vmap rule, and a custom kernel's node has no vmap
(mlx_sgemm.ops explains; tests/test_vmap.py checks the rule itself on the CPU).
Should MLX change that, the first test here fails: vmap then works on the GPU,
and the test should check its results instead (as test_vmap.py does).
"""

import mlx.core as mx
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

OPS = {"matmul": mlx_sgemm.matmul, **mlx_sgemm.ops.STAGE_OPS}


@pytest.mark.parametrize("name", OPS)
def test_vmap_stops_at_the_kernel(name):
    a, b = accuracy.random_operands((3, 33, 17), (17, 65))
    with pytest.raises(ValueError, match=r"\[Primitive::vmap\] Not implemented for CustomKernel"):
        mx.eval(mx.vmap(OPS[name], in_axes=(0, None))(a, b))


@pytest.mark.parametrize("name", OPS)
def test_a_batch_dimension_instead(name):
    """What vmap over the examples would give, as one batched product."""
    a, b = accuracy.random_operands((33, 3, 17), (17, 65))  # the examples on axis 1
    with mlx_sgemm.poisoned_outputs():
        c = OPS[name](mx.moveaxis(a, 1, 0), b)
    expected = mx.vmap(mx.matmul, in_axes=(1, None))(a, b)
    assert c.shape == expected.shape == (3, 33, 65)
    assert accuracy.relative_error(c, mx.moveaxis(a, 1, 0), b) < 1e-5
