"""TF32 on Hopper's wgmma pipeline rounds each operand to nearest, as cuBLAS's
TF32 does: the tensor cores truncate the float32 they are given, which on
data of one sign is a bias that grows with K (kernels/cuda/tile_wgmma.cu
rounds A's tiles in shared memory where its producer copies them, blocks of up
to 128 rows, A by a pass before the kernel where the TMA copies it, 256 rows,
and B's fragments in registers).

The blocks of up to 128 rows also add each k-tile's products to the sum in
the FP32 units, rounding to nearest: their errors are those of a model in
which both operands are rounded to nearest TF32 (ties away, cvt.rna) and the
products summed exactly, on normal and all-positive inputs, for each layout
(row-major B through registers, x @ W.T, a transposed A by cp.async) and split
K. Everything matmul(precision="tf32") runs is at most cuBLAS TF32's error on
the same operands, where truncation was 4-25x it on all-positive inputs
(benchmarks/tf32_accuracy.py records the shape suite)."""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy, measure
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device, kernel_choice

from ..conftest import GPU_BACKEND, requires_gpu

pytestmark = [
    requires_gpu,
    pytest.mark.gpu,
    pytest.mark.skipif(GPU_BACKEND != "cuda", reason="TF32 is CUDA's"),
    pytest.mark.skipif(not device.has_wgmma(), reason="tile_wgmma is Hopper's (sm_90a)"),
]

# The model's error times this bounds ours: the tensor cores' own adds within a
# k-tile (4 k8 steps, toward zero) come on top of the operands' rounding.
MODEL_FACTOR = 1.3


def tf32_nearest(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest TF32, ties away from zero (cvt.rna.tf32.f32; finite inputs)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def errors(c, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(ours, the model's) normwise errors against float64."""
    reference = accuracy.Reference(a, b)
    model = (tf32_nearest(a).astype(np.float64) @ tf32_nearest(b).astype(np.float64)).astype(np.float32)
    return reference.error(np.array(c)), reference.error(model)


VIEWS = {
    "b": (lambda a: a, lambda b: b),
    "w_T": (lambda a: a, lambda b: mx.swapaxes(mx.array(np.ascontiguousarray(np.array(b).T)), 0, 1)),
    "a_T": (lambda a: mx.swapaxes(mx.array(np.ascontiguousarray(np.array(a).T)), 0, 1), lambda b: b),
}


@pytest.mark.parametrize("kind", ["normal", "positive"])
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("rows", [32, 64, 128])
def test_every_block_height_rounds_to_nearest(rows, view, kind):
    m, n, k = rows - 3, 200, 4100
    a, b = accuracy.emulation_inputs(kind, m, n, k, np.random.default_rng(rows))
    spec = kernel_choice._hopper("tf32", m)
    assert spec.block_m == rows
    view_a, view_b = VIEWS[view]
    with launcher.poisoned_outputs():
        c = launcher.launch(spec, view_a(mx.array(a)), view_b(mx.array(b)))
    ours, model = errors(c, a, b)
    assert 1e-6 < ours <= MODEL_FACTOR * model, (ours, model)


@pytest.mark.parametrize("kind", ["normal", "positive"])
def test_split_k_rounds_to_nearest(kind):
    a, b = accuracy.emulation_inputs(kind, 96, 130, 16384, np.random.default_rng(3))
    spec = kernel_choice._hopper("tf32", 96)
    with launcher.poisoned_outputs():
        c = launcher.launch(spec, mx.array(a), mx.array(b), k_splits=4)
    ours, model = errors(c, a, b)
    assert 1e-6 < ours <= MODEL_FACTOR * model, (ours, model)


# Cases for each way matmul(precision="tf32") goes on Hopper: small-M FMAs,
# the pipeline at each block height (256 rows: the sum kept in the tensor
# cores, as cuBLAS keeps it), split K, x @ W.T, the float16 split's one part;
# among them the shape suite's that lost to cuBLAS before each k-tile's sum
# was added in the FP32 units (32 x 14336 x 4096: 3.3x cuBLAS's error).
CUBLAS_CASES = [([], 4, 4096, 4096, False), ([], 32, 14336, 4096, False), ([], 32, 4096, 14336, False),
                ([], 128, 1024, 4096, False), ([], 700, 900, 2000, False), ([], 300, 1000, 4100, True),
                ([8], 512, 1024, 1024, False), ([], 2048, 2048, 8192, False), ([], 4095, 4097, 4093, False)]
# The same roundings of the operands as cuBLAS's, the sums in other orders:
# on normal inputs the two errors agree to ~1% either way.
CUBLAS_FACTOR = 1.05


def test_matmul_at_tf32_is_at_most_cublas_tf32s_error():
    rows = measure.in_tf32_process("tf32_accuracy:error_rows", CUBLAS_CASES)
    worse = [r for r in rows if not r["error"] <= CUBLAS_FACTOR * r["mx_matmul_error"]]
    assert not worse, worse
