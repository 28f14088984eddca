"""Chapter 8 for a model layer's token alone on the GPU: half_gemv_one_row,
each row of A by itself against B as MLX's GEMV reads W (x @ W.T), and the
correct, slower ways it takes for any other layout (row-major B in runs, any
strides element by element), every edge of K and N, x with batch
dimensions, both half types; and mlx_sgemm.nn's layer running it for a
token, handing it x and W as they are. Launched directly (launcher.launch,
matmul's a and b), b's transposed view is the W the kernel takes.

Each product is checked as test_gpu_half_gemv checks half_gemv's: against
float64 with outputs poisoned with NaN, its normwise error within mx.matmul's
plus one rounding of the output dtype.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
import mlx_sgemm.nn
from mlx_sgemm import ops
from mlx_sgemm.build import launcher, specs
from mlx_sgemm.dispatch import kernel_choice

from ..conftest import requires_gpu
from .test_gpu_half_wgmma import DTYPES, F32, LAYOUTS, VIEWS, check, check_non_finite, operands, transposed_view

pytestmark = [requires_gpu, pytest.mark.gpu]

SPECS = specs.half_gemv_one_row_specs()
spec_ids = pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.operand_types[0])

# Edges of K (shorter than a lane's run of 8, no multiple of 8, shorter than
# a warp's 256, not a multiple of the 4 warps' 1024), of N (fewer columns
# than a block's, an odd count), several rows (each by its own blocks) and
# x with batch dimensions (each row found by x's strides; W is a layer's, 2-D).
SHAPES = [
    ((1, 4096), (4096, 4096)), ((1, 5), (5, 3)), ((1, 8), (8, 1)), ((1, 200), (200, 33)),
    ((1, 4093), (4093, 1030)), ((1, 14336), (14336, 1000)), ((1, 1032), (1032, 777)),
    ((3, 1000), (1000, 101)), ((2, 3, 1, 264), (264, 40)), ((3, 1, 4096), (4096, 520)),
]


def launched(spec, a, b):
    """``spec`` launched directly on a @ b, its outputs poisoned with NaN first."""
    with mlx_sgemm.poisoned_outputs():
        c = launcher.launch(spec, a, b)
    assert c.dtype == a.dtype
    return c


@spec_ids
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=str)
def test_every_shape_in_both_layouts(spec, view, shape_a, shape_b):
    """x @ W.T (the kernel's layout) and row-major B (its fallback in runs)."""
    a, b = operands(shape_a, shape_b, DTYPES[spec.operand_types[0]])
    b = VIEWS[view](b)
    check(launched(spec, a, b), a, b)


@spec_ids
@pytest.mark.parametrize("layout", [*LAYOUTS, "w_T_slice", "x_unaligned"])
def test_every_layout(spec, layout):
    """A transposed A, slices, general strides, W's rows a slice of wider
    ones (a row's start not 16-byte aligned), x starting off a 16-byte
    boundary: every layout the fast ways do not take is read element by
    element, or in runs where B is row-major."""
    dtype = DTYPES[spec.operand_types[0]]
    if layout == "w_T_slice":
        x, wide = operands((1, 1021), (300, 1030), dtype, seed=1)
        a, b = x, wide[:, 3:1024].T
    elif layout == "x_unaligned":
        x, w = operands((1, 1031), (1030, 300), dtype, seed=1)
        a, b = x[:, 1:], transposed_view(w)
    else:
        view_a, view_b = LAYOUTS[layout]
        a, b = operands((3, 1030), (1030, 777), dtype, seed=1)
        a, b = view_a(a), view_b(b)
    check(launched(spec, a, b), a, b)


@spec_ids
@pytest.mark.parametrize("view", VIEWS)
def test_inf_and_nan_propagate_like_mx_matmul(spec, view):
    a, b = operands((2, 600), (600, 260), DTYPES[spec.operand_types[0]], seed=3)
    a = a.at[1, 7].add(float("inf")).at[0, 0].add(float("nan"))
    check_non_finite(launched(spec, a, VIEWS[view](b)), a, VIEWS[view](b))


@spec_ids
def test_the_same_token_gives_the_same_bits_every_time(spec):
    """Every sum in a fixed order: a repeated product is bitwise the same,
    and a row gives the same bits among others (each row its own blocks)."""
    a, b = operands((4, 4096), (4096, 1000), DTYPES[spec.operand_types[0]], seed=4)
    b = transposed_view(b)
    first, second = (np.array(launched(spec, a, b).astype(F32)) for _ in range(2))
    assert np.array_equal(first, second)
    assert np.array_equal(np.array(launched(spec, a[2:3], b).astype(F32)), first[2:3])


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_layers_token_runs_it(dtype):
    """mlx_sgemm.nn's Linear on one token: half_gemv_one_row's product (the
    same bits as the kernel launched on x @ W.T), with the bias after it;
    its error within mx.matmul's plus one rounding."""
    layer = mlx_sgemm.nn.Linear(4096, 1000)
    layer.set_dtype(DTYPES[dtype])
    x, _ = operands((1, 1, 4096), (1, 1), DTYPES[dtype], seed=5)
    spec = kernel_choice.half_gemv_one_row(dtype, dtype)
    assert spec == specs.cuda_half_gemv_one_row(dtype)
    product = ops.layer_product("matmul")(x, layer.weight)
    assert mx.array_equal(product, launched(spec, x, layer.weight.T))
    check(product, x, layer.weight.T)
    assert mx.array_equal(layer(x), product + layer.bias)
