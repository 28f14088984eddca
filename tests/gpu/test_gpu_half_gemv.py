"""Chapter 8 for a token's products on the GPU: matmul multiplies a few rows
(M <= 8) of one half type on the tensor cores by half_gemv, B's runs read
straight into mma.sync's registers, for both layouts of B, every edge of K
and N, batches, slices and strides, and both outputs.

Each product is checked as test_gpu_half_wgmma checks half_wgmma's: against
float64 with outputs poisoned with NaN, its normwise error within mx.matmul's
plus one rounding of the output dtype.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.build import launcher, specs

from ..conftest import requires_gpu
from .test_gpu_half_wgmma import (
    DTYPES,
    F32,
    LAYOUTS,
    VIEWS,
    check,
    check_matmul,
    check_non_finite,
    launch_of,
    operands,
    requires_mma_sync,
)

pytestmark = [requires_gpu, pytest.mark.gpu, requires_mma_sync("half_gemv")]

# A token's shapes and their edges: K shorter than one chunk (32 k down a
# column of B, 16 down its rows), K a multiple of neither, N under one block
# and past a whole number of them, every row count, batches with broadcasts.
SHAPES = [
    ((1, 4096), (4096, 4096)), ((1, 16), (16, 1)), ((1, 1), (1, 40)), ((2, 31), (31, 33)),
    ((3, 1000), (1000, 777)), ((4, 4096), (4096, 14336)), ((5, 64), (64, 100)), ((6, 1030), (1030, 520)),
    ((7, 4104), (4104, 1024)), ((8, 4093), (4093, 1030)), ((8, 14336), (14336, 4096)),
    ((2, 3, 4096), (4096, 520)), ((3, 1, 5, 128), (2, 128, 264)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=str)
def test_matmul_multiplies_a_tokens_halves_on_the_tensor_cores(dtype, view, shape_a, shape_b):
    a, b = operands(shape_a, shape_b, DTYPES[dtype])
    check_matmul(a, VIEWS[view](b), "half_gemv")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", [*LAYOUTS, "w_T_odd_rows"])
def test_every_layout(dtype, layout):
    """Slices, general strides, a transposed A and rows that allow no vector
    load (K or N odd) take the element-by-element path."""
    view_a, view_b = LAYOUTS.get(layout, (lambda a: a, VIEWS["w_T"]))
    k = 1003 if "odd_rows" in layout else 1030
    a, b = operands((8, k), (k, 777), DTYPES[dtype], seed=1)
    check_matmul(view_a(a), view_b(b), "half_gemv")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("output", ["half", "float32"])
def test_more_rows_and_float32_output_launched_directly(dtype, view, output):
    """matmul sends more than 8 rows elsewhere, but the kernel takes any M in
    blocks of 8 rows; and it writes float32 for gemm."""
    a, b = operands((21, 2000), (2000, 300), DTYPES[dtype], seed=2)
    b = VIEWS[view](b)
    spec = specs.cuda_half_gemv(dtype, dtype if output == "half" else "float32")
    with mlx_sgemm.poisoned_outputs():
        c = launcher.launch(spec, a, b)
    assert c.dtype == (DTYPES[dtype] if output == "half" else F32)
    check(c.astype(a.dtype), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", VIEWS)
def test_inf_and_nan_propagate_like_mx_matmul(dtype, view):
    a, b = operands((8, 256), (256, 260), DTYPES[dtype], seed=3)
    a = a.at[5, 7].add(float("inf")).at[2, 0].add(float("nan"))
    b = VIEWS[view](b)
    assert launch_of(a, b).spec.stage == "half_gemv"
    check_non_finite(mlx_sgemm.matmul(a, b), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_rounds_once_after_alpha(dtype):
    """gemm asks for the float32 product (half_gemv writing float32) and scales
    it before the one rounding: no overflow where alpha brings it back."""
    a = mx.full((4, 512), 2.0, dtype=DTYPES[dtype])
    b = mx.full((512, 200), 100.0, dtype=DTYPES[dtype])
    launch = launch_of(a, b, float32_out=True)
    assert launch.spec.stage == "half_gemv" and launch.spec.output_type == "float32"
    out = mlx_sgemm.gemm(a, b, alpha=0.125, beta=0.0)
    assert np.array_equal(np.array(out.astype(F32)), np.array(mx.addmm(mx.zeros((4, 200), DTYPES[dtype]), a, b,
                                                                        alpha=0.125, beta=0.0).astype(F32)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_same_token_gives_the_same_bits_every_time(dtype):
    """The warps' partial sums meet in a fixed order: a repeated product is
    bitwise the same, one row alone too (its own way, a warp a column), and
    among several rows a row does not depend on the rows beside it in its
    block (each row's sum is its own fragment column). A row alone against one
    among others is bitwise the same only under ``deterministic=True``."""
    a, b = operands((8, 4096), (4096, 1000), DTYPES[dtype], seed=4)
    b = VIEWS["w_T"](b)
    first, second = (np.array(mlx_sgemm.matmul(a, b).astype(F32)) for _ in range(2))
    assert np.array_equal(first, second)
    among_fewer = np.array(mlx_sgemm.matmul(a[3:5], b).astype(F32))
    assert np.array_equal(among_fewer, first[3:5])
    alone, again = (np.array(mlx_sgemm.matmul(a[3:4], b).astype(F32)) for _ in range(2))
    assert np.array_equal(alone, again)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("spec", specs.half_gemv_specs(), ids=lambda s: "_".join(f"{k}{v}" for k, v in s.template))
def test_every_instance_launched_directly(spec, view):
    """Each instance matmul may run, launched directly: K at no multiple of a
    chunk, N past whole blocks, a few rows and more than a block of them."""
    element = spec.operand_types[0]
    for m, k, n, seed in ((3, 4093, 1030, 5), (8, 14336, 520, 6), (11, 272, 40, 7)):
        a, b = operands((m, k), (k, n), DTYPES[element], seed=seed)
        b = VIEWS[view](b)
        with mlx_sgemm.poisoned_outputs():
            c = launcher.launch(spec, a, b)
        check(c.astype(a.dtype), a, b)


@pytest.mark.parametrize("spec", specs.half_gemv_specs(), ids=lambda s: "_".join(f"{k}{v}" for k, v in s.template))
def test_one_row_against_rows_of_w(spec):
    """One row of A against a transposed W (x @ W.T), each instance launched
    directly: K at no multiple of 8 (W's rows a slice of wider ones), K long,
    N past whole blocks, a batch of single rows."""
    dtype = DTYPES[spec.operand_types[0]]
    x, wide = operands((1, 4093), (1030, 4104), dtype, seed=8)
    cases = [(x, wide[:, :4093].T)]
    x, w = operands((1, 14336), (1000, 14336), dtype, seed=9)
    cases.append((x, w.T))
    x, w = operands((3, 1, 4096), (3, 520, 4096), dtype, seed=10)
    cases.append((x, mx.swapaxes(w, -1, -2)))
    for a, b in cases:
        with mlx_sgemm.poisoned_outputs():
            c = launcher.launch(spec, a, b)
        check(c.astype(a.dtype), a, b)
