"""Chapter 8 on the GPU: matmul multiplies operands of one half type on Hopper's
tensor cores as they are (half_wgmma), for every layout, shape, batch and K split.

Each product is checked against float64 with outputs poisoned with NaN: its
normwise error (|| C - ref ||_F / || |A||B| ||_F) may exceed mx.matmul's on the
same operands by at most one rounding of the output dtype (unit roundoff 2**-11
for float16, 2**-8 for bfloat16), and every element must be finite where the
reference is. Operands the TMA cannot take (slices, unaligned rows, general
strides) take the producer's element-by-element path; the block shapes and
splits matmul may choose are each run directly.
"""

import dataclasses

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.build import launcher, specs
from mlx_sgemm.dispatch import device, kernel_choice

from ..conftest import GPU_BACKEND, requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu,
              pytest.mark.skipif(GPU_BACKEND != "cuda" or not device.has_wgmma(),
                                 reason="half_wgmma needs a Hopper GPU (wgmma)")]

F16, BF16, F32 = mx.float16, mx.bfloat16, mx.float32
DTYPES = {"float16": F16, "bfloat16": BF16}
UNIT_ROUNDOFF = {F16: 2.0**-11, BF16: 2.0**-8}


def requires_mma_sync(kernel: str):
    """The skip of a GPU test module whose kernel runs mma.sync m16n8k16
    (sm_80 on; a GPU that does not report its capability is skipped too)."""
    return pytest.mark.skipif(GPU_BACKEND != "cuda" or (device.cuda_compute_capability() or (0, 0)) < (8, 0),
                              reason=f"{kernel} needs a CUDA GPU with mma.sync m16n8k16 (sm_80 on)")


def operands(shape_a, shape_b, dtype, seed=0):
    rng = np.random.default_rng(seed)
    draw = lambda shape: mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dtype)  # noqa: E731
    return draw(shape_a), draw(shape_b)


def normwise_error(c, a, b) -> float:
    a64, b64 = (np.array(x.astype(F32), np.float64) for x in (a, b))
    ref = a64 @ b64
    c64 = np.array(c.astype(F32), np.float64)
    assert c64.shape == ref.shape and np.isfinite(c64).all(), "wrong shape, or NaN/Inf (an unwritten element?)"
    return float(np.linalg.norm(c64 - ref) / np.linalg.norm(np.abs(a64) @ np.abs(b64)))


def launch_of(a, b, **kwargs):
    return ops.route_plan(kernel_choice.chooser("float32"), GPU_BACKEND, a.shape, b.shape, True,
                          (str(a.dtype).rpartition(".")[2],) * 2, **kwargs)[-1]


def check(c, a, b):
    expected = mx.matmul(a, b)
    assert c.dtype == expected.dtype and c.shape == expected.shape
    ours, theirs = normwise_error(c, a, b), normwise_error(expected, a, b)
    assert ours <= theirs + UNIT_ROUNDOFF[a.dtype], f"error {ours:.2e}, mx.matmul's {theirs:.2e}"


def check_matmul(a, b, stage):
    """matmul's launch for a @ b is ``stage``'s, and its product, on outputs
    poisoned with NaN, passes :func:`check`."""
    launch = launch_of(a, b)
    assert launch.spec.stage == stage
    with mlx_sgemm.poisoned_outputs():
        c = mlx_sgemm.matmul(a, b)
    check(c, a, b)
    return launch


# (a's shape, b's shape, how b is viewed): multiples of no tile, every block
# height and width (384 x 5750: 128 x 192, two rounds of 128 columns against
# one of 192), K splits (few tiles, long K), batches with broadcasts.
SHAPES = [
    ((9, 64), (64, 8)), ((65, 100), (100, 300)), ((128, 1000), (1000, 1000)), ((300, 4096), (4096, 520)),
    ((1000, 1032), (1032, 1000)), ((32, 4096), (4096, 4096)), ((100, 8192), (8192, 200)),
    ((2048, 1024), (1024, 2048)), ((383, 200), (200, 5750)), ((3, 200, 256), (256, 136)),
    ((2, 1, 70, 128), (3, 128, 264)),
]
def transposed_view(x):
    """The same values as a view of their transpose (strides (1, rows)): a weight W as W.T."""
    return mx.swapaxes(mx.contiguous(mx.swapaxes(x, -1, -2)), -1, -2)


VIEWS = {
    "b": lambda w: w,                            # row-major B: MN-major tiles
    "w_T": lambda w: transposed_view(w),          # x @ W.T: B a transposed view, K-major tiles
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=str)
def test_matmul_multiplies_halves_on_the_tensor_cores(dtype, view, shape_a, shape_b):
    a, b = operands(shape_a, shape_b, DTYPES[dtype])
    launch = check_matmul(a, VIEWS[view](b), "half_wgmma")
    assert launch.k_splits == 1 or launch.spec.sum_to == dtype


# Layouts the TMA takes (a transposed A: MN-major A) and those it does not
# (slices with odd starts and strides, rows not 16-byte aligned): the
# element-by-element path.
LAYOUTS = {
    "a_T": (lambda a: transposed_view(a), lambda b: b),
    "a_T_w_T": (lambda a: transposed_view(a), lambda b: transposed_view(b)),
    "slices": (lambda a: a[1:, 3:], lambda b: b[3:, 1:-2]),
    "strided": (lambda a: a[::2, :], lambda b: b[:, ::3]),
    "odd_rows": (lambda a: a, lambda b: b),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout(dtype, layout):
    view_a, view_b = LAYOUTS[layout]
    k = 1003 if layout == "odd_rows" else 1030
    a, b = operands((300, k), (k, 777), DTYPES[dtype], seed=1)
    check_matmul(view_a(a), view_b(b), "half_wgmma")


def launch_half_kernel(make_spec, a, b, dtype, block, splits=1, output="half"):
    """The instance ``make_spec`` (specs.cuda_half_wgmma or cuda_half_mma) makes
    for ``block`` launched directly on a @ b, K split ``splits`` ways, its
    result rounded to the half type (by the kernel, or by split_sum after
    float32 partial sums) or float32, poisoned with NaN first."""
    spec = make_spec(dtype, dtype if output == "half" and splits == 1 else "float32", BM=block[0], BN=block[1])
    if splits > 1 and output == "half":  # float32 partial sums, added and rounded by split_sum
        spec = dataclasses.replace(spec, sum_to=dtype)
    with mlx_sgemm.poisoned_outputs():
        c = launcher.launch(spec, a, b, k_splits=splits)
    assert c.dtype == getattr(mx, dtype if output == "half" else "float32")
    return c


def split_and_output_cases(blocks):
    """Every dtype, block, split (none, 3 ways) and output for a split test."""
    return pytest.mark.parametrize("dtype, block, splits, output", [
        (dtype, block, splits, output) for dtype in DTYPES for block in blocks
        for splits in (1, 3) for output in ("half", "float32")], ids=str)


@split_and_output_cases(specs.HALF_WGMMA_BLOCKS)
def test_every_block_split_and_output(dtype, block, splits, output):
    a, b = operands((200, 3000), (3000, 600), DTYPES[dtype], seed=2)
    check(launch_half_kernel(specs.cuda_half_wgmma, a, b, dtype, block, splits, output).astype(a.dtype), a, b)


def non_finite_operands(dtype):
    """A 130 x 256 @ 256 x 260 product with an Inf and a NaN in A."""
    a, b = operands((130, 256), (256, 260), DTYPES[dtype], seed=3)
    return a.at[5, 7].add(float("inf")).at[70, 0].add(float("nan")), b


def check_non_finite(c, a, b):
    """Inf and NaN where mx.matmul has them, the rest close to its values."""
    ours, theirs = (np.array(x.astype(F32)) for x in (c, mx.matmul(a, b)))
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)) and np.array_equal(np.isinf(ours), np.isinf(theirs))
    finite = np.isfinite(theirs)
    assert np.allclose(ours[finite], theirs[finite], rtol=4 * UNIT_ROUNDOFF[a.dtype], atol=0.5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inf_and_nan_propagate_like_mx_matmul(dtype):
    a, b = non_finite_operands(dtype)
    check_non_finite(mlx_sgemm.matmul(a, b), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_rounds_once_after_alpha(dtype):
    """gemm asks for the float32 product (half_wgmma writing float32) and
    scales it before the one rounding: no overflow where alpha brings it back."""
    a = mx.full((300, 512), 2.0, dtype=DTYPES[dtype])
    b = mx.full((512, 200), 100.0, dtype=DTYPES[dtype])
    assert launch_of(a, b, float32_out=True).spec.output_type == "float32"
    out = mlx_sgemm.gemm(a, b, alpha=0.125, beta=0.0)
    assert np.array_equal(np.array(out.astype(F32)), np.array(mx.addmm(mx.zeros((300, 200), DTYPES[dtype]), a, b,
                                                                        alpha=0.125, beta=0.0).astype(F32)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_deterministic_rows_do_not_depend_on_the_batch(dtype):
    a, b = operands((300, 1024), (1024, 1000), DTYPES[dtype], seed=4)
    alone = mlx_sgemm.matmul(a[17:18], b, deterministic=True)
    together = mlx_sgemm.matmul(a, b, deterministic=True)[17:18]
    assert launch_of(a, b).spec.stage == "half_wgmma"
    assert np.array_equal(np.array(alone.astype(F32)), np.array(together.astype(F32)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_in_half_precision(dtype):
    a, b = operands((130, 200), (200, 70), DTYPES[dtype], seed=5)
    loss = lambda x, y: mlx_sgemm.matmul(x, y).astype(F32).sum()  # noqa: E731
    da, db = mx.grad(loss, argnums=(0, 1))(a, b)
    ref_da, ref_db = mx.grad(lambda x, y: mx.matmul(x, y).astype(F32).sum(), argnums=(0, 1))(a, b)
    for got, want in ((da, ref_da), (db, ref_db)):
        assert got.dtype == want.dtype
        assert np.allclose(np.array(got.astype(F32)), np.array(want.astype(F32)), rtol=1e-2, atol=1e-1)
