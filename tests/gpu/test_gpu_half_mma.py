"""Chapter 8 without wgmma on the GPU: half_mma (mma.sync m16n8k16) multiplies
operands of one half type as they are, for every layout, shape, batch, block,
K split and output type.

The kernels are launched directly (mlx_sgemm.build.launcher.launch), so they
run on any CUDA GPU from sm_80 on, an H100 included, where matmul itself
picks half_wgmma; matmul's own route to half_mma is checked on GPUs without
wgmma alone. Each product is checked as test_gpu_half_wgmma checks
half_wgmma's: against float64 with outputs poisoned with NaN, its normwise
error within mx.matmul's plus one rounding of the output dtype.
"""

import dataclasses

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.build import launcher, specs
from mlx_sgemm.dispatch import device

from ..conftest import GPU_BACKEND, requires_gpu
from .test_gpu_half_wgmma import DTYPES, F32, LAYOUTS, SHAPES, UNIT_ROUNDOFF, VIEWS, check, launch_of, operands

pytestmark = [requires_gpu, pytest.mark.gpu,
              pytest.mark.skipif(GPU_BACKEND != "cuda" or (device.cuda_compute_capability() or (0, 0)) < (8, 0),
                                 reason="half_mma needs a CUDA GPU with mma.sync m16n8k16 (sm_80 on)")]

# Shapes half_wgmma's test lacks: one k-tile and less, K not a multiple of 8
# (rows of no 16-byte copy), M and N under one block and just over it.
EDGE_SHAPES = [((1, 16), (16, 1)), ((63, 63), (63, 129)), ((129, 200), (200, 127)), ((70, 1001), (1001, 260))]


def run(a, b, dtype, block, splits=1, output="half"):
    """half_mma's instance for ``block`` on a @ b, K split ``splits`` ways, its
    result rounded to the half type (by the kernel, or by split_sum after
    float32 partial sums) or float32, poisoned with NaN first."""
    out = dtype if output == "half" and splits == 1 else "float32"
    spec = specs.cuda_half_mma(dtype, out, BM=block[0], BN=block[1])
    if splits > 1 and output == "half":
        spec = dataclasses.replace(spec, sum_to=dtype)
    with mlx_sgemm.poisoned_outputs():
        c = launcher.launch(spec, a, b, k_splits=splits)
    assert c.dtype == getattr(mx, dtype if output == "half" else "float32")
    return c


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("block", specs.HALF_MMA_BLOCKS, ids=str)
@pytest.mark.parametrize("shape_a, shape_b", SHAPES + EDGE_SHAPES, ids=str)
def test_every_shape_and_block(dtype, view, block, shape_a, shape_b):
    a, b = operands(shape_a, shape_b, DTYPES[dtype])
    b = VIEWS[view](b)
    check(run(a, b, dtype, block), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", [*LAYOUTS, "a_T_odd_rows"])
def test_every_layout(dtype, layout):
    """Transposed views read in place (MN-major tiles), slices, general strides
    and rows of no 16-byte copy (element by element), either tile layout."""
    view_a, view_b = LAYOUTS.get(layout, LAYOUTS["a_T"])
    k = 1003 if "odd_rows" in layout else 1030
    m = 301 if layout == "a_T_odd_rows" else 300  # a transposed A whose rows (M apart) are not 16-byte aligned
    a, b = operands((m, k), (k, 777), DTYPES[dtype], seed=1)
    a, b = view_a(a), view_b(b)
    for block in specs.HALF_MMA_BLOCKS:
        check(run(a, b, dtype, block), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", specs.HALF_MMA_BLOCKS, ids=str)
@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("output", ["half", "float32"])
def test_every_split_and_output(dtype, block, splits, output):
    a, b = operands((200, 3000), (3000, 600), DTYPES[dtype], seed=2)
    check(run(a, b, dtype, block, splits, output).astype(a.dtype), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inf_and_nan_propagate_like_mx_matmul(dtype):
    a, b = operands((130, 256), (256, 260), DTYPES[dtype], seed=3)
    a = a.at[5, 7].add(float("inf")).at[70, 0].add(float("nan"))
    ours, theirs = (np.array(x.astype(F32)) for x in (run(a, b, dtype, specs.HALF_MMA_BLOCKS[0]), mx.matmul(a, b)))
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)) and np.array_equal(np.isinf(ours), np.isinf(theirs))
    finite = np.isfinite(theirs)
    assert np.allclose(ours[finite], theirs[finite], rtol=4 * UNIT_ROUNDOFF[DTYPES[dtype]], atol=0.5)


@pytest.mark.skipif(device.has_wgmma(), reason="on Hopper matmul picks half_wgmma (tests/gpu/test_gpu_half_wgmma.py)")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape_a, shape_b", [((512, 4096), (4096, 1024)), ((32, 4096), (4096, 4096)),
                                              ((2, 100, 300), (300, 200))], ids=str)
def test_matmul_picks_half_mma_without_wgmma(dtype, shape_a, shape_b):
    a, b = operands(shape_a, shape_b, DTYPES[dtype], seed=4)
    assert launch_of(a, b).spec.stage == "half_mma"
    with mlx_sgemm.poisoned_outputs():
        c = mlx_sgemm.matmul(a, b)
    check(c, a, b)
    assert mlx_sgemm.explain(a, b).kernel == "half_mma"
