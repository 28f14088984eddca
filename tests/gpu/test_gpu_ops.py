"""Every stage against mx.matmul and a float64 reference, on the GPU.

Inputs are fresh random non-zero float32; outputs are poisoned with NaN before
the kernel runs, so an element it never writes fails the check. The tolerance is
float32 accuracy: at most 4x the error of mx.matmul in float32 (cuBLAS SGEMM with
MLX_ENABLE_TF32=0 on CUDA, see conftest) on the same inputs. For tiny K a single
rounding can make that error arbitrarily small by luck, so the bound is at least
FLOOR (a few float32 roundings, see there).
"""

import mlx.core as mx
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

# The least error bound, for products too short to average anything out (K = 1):
# 3xTF32 drops small * small (up to 2^-22 relative) and the tensor cores' add of
# the big product truncates (up to 2^-23): 3 * 2^-23 at worst, where cuBLAS
# rounds correctly (2^-24). Measured on an H200: 3.6e-7 once in ~20 runs of
# tile_simdgroup at 1x1x1 against the old floor of 4 * 2^-24.
FLOOR = 2.0**-21

# (M, N, K): tiny, odd, tile-sized, and thin problems that are multiples of no tile.
SHAPES = [
    (1, 1, 1), (7, 5, 3), (33, 65, 17), (64, 64, 64), (127, 129, 131),
    (1000, 1, 1000), (1, 1000, 1000), (513, 257, 1025), (1000, 1000, 1),
    (300, 200, 4096), (20, 300, 1000), (50, 513, 3000),  # the last two: matmul's 32- and 64-row blocks
]
STAGES = list(specs.STAGES)
OPS = [*STAGES, "matmul"]  # every stage, and the adaptive op's float32 choice


def check(op, a, b):
    with mlx_sgemm.poisoned_outputs():
        c = op(a, b)
    expected = mx.matmul(a, b)
    assert c.shape == expected.shape and c.dtype == mx.float32
    err = accuracy.relative_error(c, a, b)
    base = accuracy.relative_error(expected, a, b)
    assert base < 1e-5, f"mx.matmul is not float32-accurate ({base:.2e}): is TF32 on?"
    assert err <= max(4 * base, FLOOR), f"error {err:.3e} vs mx.matmul {base:.3e}"
    return err, base


@pytest.mark.parametrize("stage", OPS)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_stage_matches_float64(stage, mnk):
    m, n, k = mnk
    a, b = accuracy.random_operands((m, k), (k, n))
    check(getattr(mlx_sgemm, stage), a, b)


@pytest.mark.parametrize("stage", OPS)
@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((3, 1, 33, 17), (2, 17, 65)),  # both sides broadcast
        ((4, 65, 33), (33, 17)),  # b shared by the whole batch
        ((33,), (2, 33, 7)),  # 1-D a against a batch
        ((2, 5, 33, 9), (2, 5, 9, 40)),  # batch dims merge into one
        ((129,), (129,)),  # vector dot product: a 0-D result
    ],
)
def test_stage_broadcasts_like_matmul(stage, shape_a, shape_b):
    a, b = accuracy.random_operands(shape_a, shape_b)
    check(getattr(mlx_sgemm, stage), a, b)


@pytest.mark.parametrize(
    "shape_a, shape_b, b_transposed",
    [
        ((600, 1027), (1027, 515), False),  # K and N not multiples of 4
        ((2, 520, 1030), (515, 1030), True),  # batched x @ W.T, W a transposed view
    ],
)
def test_matmul_pads_unaligned_operands(shape_a, shape_b, b_transposed):
    """Big products whose rows are not 16-byte aligned run on zero-padded copies
    (kernel_choice.padding); the result has the true shape and float32 accuracy."""
    a, b = accuracy.random_operands(shape_a, shape_b)
    if b_transposed:
        b = b.T
    assert kernel_choice.padding(device.CUDA, plan(a.shape, b.shape)) != (0, 0)
    check(mlx_sgemm.matmul, a, b)


@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_tf32_has_tf32_accuracy(mnk):
    """precision="tf32": one TF32 pass, every output written, error at TF32's
    level (unit roundoff 2**-11; cuBLAS's TF32 mode measures ~1e-4), no worse."""
    m, n, k = mnk
    a, b = accuracy.random_operands((m, k), (k, n))
    with mlx_sgemm.poisoned_outputs():
        c = mlx_sgemm.matmul(a, b, precision="tf32")
    assert accuracy.relative_error(c, a, b) < 2.0**-10


@pytest.mark.parametrize("stage", STAGES)
def test_stage_reports_backend(stage):
    assert mlx_sgemm.backend() in ("metal", "cuda")


def test_new_shapes_compile_nothing_new():
    from mlx_sgemm.build import registry

    start = registry.created()  # what earlier tests in this process compiled
    for stage in STAGES:
        getattr(mlx_sgemm, stage)(*accuracy.random_operands((9, 10), (10, 11)))
    before = registry.created()
    for m in (3, 17, 70):
        for stage in STAGES:
            mx.eval(getattr(mlx_sgemm, stage)(*accuracy.random_operands((m, 5), (5, m + 1))))
    assert registry.created() == before
    # At most every stage's kernel, plus what matmul may choose among.
    assert before - start <= len(specs.STAGES) + len(kernel_choice.variants(mlx_sgemm.backend()))
