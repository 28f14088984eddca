"""``matmul(..., deterministic=True)`` on the GPU: each row bitwise the same
whatever M, batch or call it is computed in, in float32 and TF32 precision.

Bits are compared as bits (the results viewed as uint32), on fresh random
operands each run.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

ROWS = (1, 7, 64, 4096)
# (K, N): aligned, and rows of A and B not 16-byte aligned (the default pads
# those from 512 rows on; deterministic mode never does).
KN = [(1024, 256), (1027, 515)]


def bits(x: mx.array) -> mx.array:
    return x.view(mx.uint32)


def same_bits(x: mx.array, y: mx.array) -> bool:
    return x.shape == y.shape and mx.array_equal(bits(x), bits(y)).item()


def deterministic(a, b, precision):
    with mlx_sgemm.poisoned_outputs():
        return mlx_sgemm.matmul(a, b, precision=precision, deterministic=True)


@pytest.mark.parametrize("precision", kernel_choice.PRECISIONS)
@pytest.mark.parametrize("kn", KN, ids=lambda s: "x".join(map(str, s)))
def test_a_row_is_the_same_in_every_m(precision, kn):
    k, n = kn
    a, b = accuracy.random_operands((max(ROWS), k), (k, n))
    whole = {m: deterministic(a[:m], b, precision) for m in ROWS}
    checked = sorted({0, 1, 6, 63, 100, 2047, 4095})
    singles = {i: deterministic(a[i:i + 1], b, precision) for i in checked}
    for m, c in whole.items():
        for i in (i for i in checked if i < m):
            assert same_bits(c[i:i + 1], singles[i]), (m, i)
    # Every row of a smaller product inside a larger one, not only the sampled ones.
    assert same_bits(whole[64], whole[4096][:64]) and same_bits(whole[7], whole[64][:7])
    # A 1-D row (M = 1 with the axis dropped) is the same too.
    assert same_bits(deterministic(a[5], b, precision), whole[7][5])
    # And it is the product asked for.
    bound = 2.0**-10 if precision == "tf32" else 1e-5
    assert accuracy.relative_error(whole[64], a[:64], b) < bound


@pytest.mark.parametrize("precision", kernel_choice.PRECISIONS)
def test_a_row_is_the_same_in_a_batch_and_through_a_transposed_weight(precision):
    k, n = 1024, 384
    a, w = accuracy.random_operands((4, 1024, k), (n, k))
    b = w.T  # x @ W.T, W read in place
    batched = deterministic(a, b, precision)
    flat = deterministic(a.reshape(-1, k), b, precision)
    assert same_bits(batched.reshape(-1, n), flat)
    for j, r in ((0, 0), (1, 513), (3, 1023)):
        assert same_bits(batched[j, r], deterministic(a[j, r], b, precision)), (j, r)
        assert same_bits(batched[j, r:r + 1], deterministic(a[j, r:r + 1], b, precision)), (j, r)


@pytest.mark.parametrize("precision", kernel_choice.PRECISIONS)
def test_the_same_bits_every_call(precision):
    a, b = accuracy.random_operands((100, 2048), (2048, 64))  # few tiles, long K: no split here
    first = deterministic(a, b, precision)
    for _ in range(3):
        assert same_bits(deterministic(a, b, precision), first)


@pytest.mark.parametrize("precision", kernel_choice.PRECISIONS)
def test_the_default_mode_is_unchanged(precision):
    """Without deterministic=True, matmul's heuristic still picks its kernel by
    M (small_m for few rows) and splits K where tiles are few, as before."""
    backend = mlx_sgemm.backend()
    assert kernel_choice.heuristic(backend, precision, plan((1, 4096), (4096, 4096))).spec.stage == "small_m"
    assert kernel_choice.deterministic(backend, precision).spec.stage != "small_m"
    if backend == "cuda" and device.has_wgmma():
        assert kernel_choice.heuristic(backend, precision, plan((128, 4096), (4096, 1024))).k_splits > 1
    a, b = accuracy.random_operands((3, 4096), (4096, 512))
    with mlx_sgemm.poisoned_outputs():
        c = mlx_sgemm.matmul(a, b, precision=precision)
    bound = 2.0**-10 if precision == "tf32" else 1e-5
    assert accuracy.relative_error(c, a, b) < bound
    assert np.isfinite(np.asarray(c)).all()
