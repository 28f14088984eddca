"""On a Hopper GPU: tile_wgmma's TMA copies give TF32's accuracy on every
shape and layout, also where the TMA copies one operand and cp.async the
other, and call after call (docs/performance-log.md, "wgmma register operands
rewritten in flight")."""

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher, specs
from mlx_sgemm.dispatch import device

from ..conftest import requires_gpu

pytestmark = [
    requires_gpu, pytest.mark.gpu,
    pytest.mark.skipif(not device.has_wgmma(), reason="TMA kernels are Hopper's (sm_90a): no wgmma here"),
]

TF32_BOUND = 2.0**-10  # accuracy.relative_error: ~1e-4 for TF32, 4e-3 for the race below
SPEC = specs.cuda_wgmma("matmul_tf32_wgmma", SPLIT=False, BM=256, IN_FLIGHT=True, LOOKAHEAD=1, TMA=1)


def transposed_view(x):
    """x's values, stored transposed (a column-major view: no TMA for it)."""
    return mx.swapaxes(mx.contiguous(mx.swapaxes(x, -1, -2)), -1, -2)


def check(spec, a, b, k_splits=1):
    with launcher.poisoned_outputs():
        c = launcher.launch(spec, a, b, k_splits=k_splits)
    assert not mx.any(mx.isnan(c)).item(), "an output was not written"
    error = accuracy.relative_error(np.array(c), np.array(a), np.array(b))
    assert error < TF32_BOUND, error


def a_rows_apart(m, k, stride):
    """An m x k A whose rows are `stride` apart (no tensor map: cp.async)."""
    rows, _ = accuracy.random_operands((m, stride), (1, 1))
    return rows[:, :k]


LAYOUTS = {
    "both by TMA": lambda m, n, k: accuracy.random_operands((m, k), (k, n)),
    "A by cp.async (rows apart)": lambda m, n, k: (a_rows_apart(m, k, k + 12),
                                                  accuracy.random_operands((1, 1), (k, n))[1]),
    "A transposed": lambda m, n, k: (transposed_view(accuracy.random_operands((m, k), (1, 1))[0]),
                                     accuracy.random_operands((1, 1), (k, n))[1]),
    # x @ W.T: B^T's rows by TMA, both operands of each product by descriptor.
    "B transposed": lambda m, n, k: (accuracy.random_operands((m, k), (1, 1))[0],
                                     transposed_view(accuracy.random_operands((1, 1), (k, n))[1])),
    # W's rows k + 12 apart: no map for B^T, its rows by cp.async (same layout).
    "B transposed, rows apart": lambda m, n, k: (accuracy.random_operands((m, k), (1, 1))[0],
                                                 accuracy.random_operands((n, k + 12), (1, 1))[0][:, :k].T),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mnk", [(256, 128, 32), (1, 7, 36), (20, 300, 1000), (129, 257, 65),
                                 (301, 260, 500), (513, 4100, 96)])
def test_tma_matches_float64(layout, mnk):
    check(SPEC, *LAYOUTS[layout](*mnk))


def test_tma_batches_broadcasts_and_splits():
    spec = SPEC
    a, b = accuracy.random_operands((3, 260, 96), (3, 96, 129))
    check(spec, a, b)
    check(spec, a[:1], b)  # A broadcast over the batch
    a, b = accuracy.random_operands((300, 4000), (4000, 2048))
    check(spec, a, b, k_splits=3)
    rows, _ = accuracy.random_operands((301, 512), (1, 1))
    check(spec, rows[1:], accuracy.random_operands((1, 1), (512, 260))[1])  # A from a row on
    # x @ W.T: batched (W broadcast), split along K (B^T's map from k = 0).
    a, w = accuracy.random_operands((3, 260, 96), (129, 96))
    check(spec, a, w.T)
    a, w = accuracy.random_operands((300, 4000), (2048, 4000))
    check(spec, a, w.T, k_splits=3)


def test_products_in_flight_keep_their_fragments():
    """40 calls at once, A by cp.async and B by TMA: a kernel whose next k-tile's
    fragments overwrite registers that queued products have yet to read gets
    19 of 40 calls wrong (seen on an H200)."""
    a, b = a_rows_apart(1100, 1000, 1024), accuracy.random_operands((1, 1), (1000, 1100))[1]
    outs = [launcher.launch(SPEC, a, b) for _ in range(40)]
    mx.eval(*outs)
    a64, b64 = np.array(a).astype(np.float64), np.array(b).astype(np.float64)
    ref, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    # Element by element: the race put 1-4% on some of one warpgroup's
    # columns; TF32 alone stays under 3e-4 of |A||B| at this K.
    wrong = [i for i, c in enumerate(outs) if not (np.abs(np.array(c) - ref) / scale).max() < 1e-2]
    assert not wrong, f"calls {wrong} of 40 wrong"
