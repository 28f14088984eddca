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

import functools

import pytest

import mlx_sgemm
from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import device

from ..conftest import requires_gpu
from .test_gpu_half_wgmma import (
    DTYPES,
    LAYOUTS,
    SHAPES,
    VIEWS,
    check,
    check_non_finite,
    launch_half_kernel,
    launch_of,
    non_finite_operands,
    operands,
    requires_mma_sync,
    split_and_output_cases,
)

pytestmark = [requires_gpu, pytest.mark.gpu, requires_mma_sync("half_mma")]

# Shapes half_wgmma's test lacks: one k-tile and less, K not a multiple of 8
# (rows of no 16-byte copy), M and N under one block and just over it.
EDGE_SHAPES = [((1, 16), (16, 1)), ((63, 63), (63, 129)), ((129, 200), (200, 127)), ((70, 1001), (1001, 260))]


# half_mma's instance for a block, launched directly (launch_half_kernel).
run = functools.partial(launch_half_kernel, specs.cuda_half_mma)


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


@split_and_output_cases(specs.HALF_MMA_BLOCKS)
def test_every_split_and_output(dtype, block, splits, output):
    a, b = operands((200, 3000), (3000, 600), DTYPES[dtype], seed=2)
    check(run(a, b, dtype, block, splits, output).astype(a.dtype), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inf_and_nan_propagate_like_mx_matmul(dtype):
    a, b = non_finite_operands(dtype)
    check_non_finite(run(a, b, dtype, specs.HALF_MMA_BLOCKS[0]), a, b)


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
