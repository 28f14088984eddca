"""The small-M kernels (kernels/cuda/small_m.cu, small_m_wide.cu) against float64,
on a CUDA GPU.

It is written for M <= 8 but must be right for any M, any strides (B a
transposed view, slices, broadcast batches) and for split-K views: A (M, K) seen
as a batch (S, M, K/S) through mx.as_strided and B as (S, K/S, N), summed over S.
Outputs are poisoned with NaN (every element must be written); the tolerance is
test_gpu_ops's: 4x the error of mx.matmul in float32 on the same inputs.
"""

import dataclasses

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher, specs

from ..conftest import GPU_BACKEND, requires_gpu

pytestmark = [
    requires_gpu,
    pytest.mark.gpu,
    pytest.mark.skipif(GPU_BACKEND != "cuda", reason="small_m is a CUDA kernel"),
]

UNIT_ROUNDOFF = 2.0**-24

# Each variant takes other paths of the kernel: 8 warps on a strip of 32
# columns (the default: one warp per column group, 4 k-groups per warp); 2
# warps per column group (column-major PARTS) and 8 k-groups per warp (BN 16);
# 4 warps; 16 warps (2 per column group); 16 warps, 2 k-groups per warp (BN
# 64). The shapes below have 1 to 8 rows of C in a tile (the kernel's 1-, 2-,
# 4- and 8-row products) and more.
SPECS = {
    "default": specs.spec("small_m", "cuda"),
    "w16": specs.cuda_small_m(WARPS=16, STAGES=3),
    "parts": specs.cuda_small_m(BN=16, WARPS=8, STAGES=3),
    "four_warps": specs.cuda_small_m(BN=16, WARPS=4, STAGES=4),
    "wide": specs.cuda_small_m(BN=64, WARPS=16, STAGES=3),
    # small_m_wide (kernels/cuda/small_m_wide.cu): 4-row, 128-column blocks,
    # B loaded straight into registers; 16 warps take 8 columns each
    # (column-major) and one chunk at a time (row-major).
    "direct": specs.spec("small_m_wide", "cuda"),
    "direct_w16": specs.cuda_small_m_wide(WARPS=16, U=1),
}


def run(s, a, b):
    with mlx_sgemm.poisoned_outputs():
        return launcher.launch(s, a, b)


def check(c, a, b, expected=None):
    """c against float64 (a, b as numpy: the exact product of what the kernel read)."""
    a64, b64 = np.asarray(a), np.asarray(b)
    if expected is None:
        expected = mx.matmul(mx.array(a64), mx.array(b64))
    err = accuracy.relative_error(c, a64, b64)
    base = accuracy.relative_error(expected, a64, b64)
    assert base < 1e-5, f"mx.matmul is not float32-accurate ({base:.2e}): is TF32 on?"
    assert err <= 4 * max(base, UNIT_ROUNDOFF), f"error {err:.3e} vs mx.matmul {base:.3e}"


SHAPES = [(m, n, k) for m in (*range(1, 10), 17) for n, k in ((7, 33), (1000, 1000))]
SHAPES += [(1, 1, 1), (3, 1, 4097), (8, 4100, 129), (5, 33, 1), (8, 128, 8192), (2, 4096, 256)]


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("transposed_b", [False, True], ids=["b", "b_view_T"])
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_float64(name, transposed_b, mnk):
    m, n, k = mnk
    a, b = accuracy.random_operands((m, k), (k, n))
    if transposed_b:
        b = mx.contiguous(b.T).T  # same values, column-major: x @ W.T
    check(run(SPECS[name], a, b), a, b)


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("transposed_b", [False, True], ids=["b", "b_view_T"])
@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((3, 1, 4, 129), (2, 129, 65)),  # both sides broadcast
        ((5, 1, 300), (300, 37)),  # b shared by the whole batch
        ((1, 2, 300), (3, 300, 40)),  # a shared
        ((300,), (2, 300, 9)),  # 1-D a: one row
    ],
)
def test_broadcast_batches(name, transposed_b, shape_a, shape_b):
    a, b = accuracy.random_operands(shape_a, shape_b)
    if transposed_b:
        b = mx.swapaxes(mx.contiguous(mx.swapaxes(b, -1, -2)), -1, -2)
    check(run(SPECS[name], a, b), a, b)


@pytest.mark.parametrize("name", list(SPECS))
def test_slices_and_transposed_a(name):
    """Strides that allow no 16-byte loads: odd offsets and row strides, A.T."""
    a, b = accuracy.random_operands((9, 515), (515, 1003))
    a_s, b_s = a[1:, 1:514], b[1:514, 3:998]  # unaligned starts, odd row strides
    check(run(SPECS[name], a_s, b_s), a_s, b_s)
    w = mx.contiguous(b.T)[3:998, 1:514]  # W slice, then its transposed view
    check(run(SPECS[name], a_s, w.T), a_s, w.T)
    a_t = mx.contiguous(a.T).T  # A column-major
    check(run(SPECS[name], a_t, b), a_t, b)


def split_k(a, b, s, transposed_b):
    """A (M, K) as (S, M, K/S) and B (K, N) as (S, K/S, N): views, no copies."""
    m, k = a.shape
    n = b.shape[1]
    a_s = mx.as_strided(a, (s, m, k // s), (k // s, k, 1))
    if transposed_b:
        w = mx.contiguous(b.T)  # (N, K), passed as its transposed view
        b_s = mx.swapaxes(mx.as_strided(w, (s, n, k // s), (k // s, k, 1)), 1, 2)
    else:
        b_s = b.reshape(s, k // s, n)
    return a_s, b_s


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("transposed_b", [False, True], ids=["b", "b_view_T"])
@pytest.mark.parametrize("m, n, k, s", [(1, 1024, 4096, 16), (4, 1000, 1024, 8), (8, 260, 516, 4), (3, 33, 96, 3)])
def test_split_k_views(name, transposed_b, m, n, k, s):
    a, b = accuracy.random_operands((m, k), (k, n))
    a_s, b_s = split_k(a, b, s, transposed_b)
    parts = run(SPECS[name], a_s, b_s)
    assert parts.shape == (s, m, n)
    check(parts, np.asarray(a_s), np.asarray(b_s))  # each part exact
    check(mx.sum(parts, axis=0), a, b, expected=mx.matmul(a, b))


def test_mismatched_spec_writes_nan():
    """A spec whose block_n or shared memory disagrees with its template must
    not pass silently."""
    a, b = accuracy.random_operands((4, 300), (300, 200))
    for bad in (dataclasses.replace(SPECS["default"], block_n=64),
                dataclasses.replace(SPECS["default"], shared_memory=1024),
                dataclasses.replace(SPECS["direct"], block_n=64),
                dataclasses.replace(SPECS["direct"], threadgroup=(128, 1, 1))):
        assert accuracy.relative_error(run(bad, a, b), a, b) == float("inf")


@pytest.mark.parametrize("name", ["default", "direct"])
@pytest.mark.parametrize("transposed_b", [False, True], ids=["b", "b_view_T"])
def test_same_bits_every_run(name, transposed_b):
    """The partial sums meet in a fixed order (no atomics): no run differs."""
    a, b = accuracy.random_operands((3, 4099), (4099, 1030))
    if transposed_b:
        b = mx.contiguous(b.T).T
    first = np.asarray(run(SPECS[name], a, b))
    for _ in range(5):
        assert np.array_equal(np.asarray(run(SPECS[name], a, b)), first)
