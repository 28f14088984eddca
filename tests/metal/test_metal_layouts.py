"""Every Metal stage on operands in any layout, read in place (no copies).

MLX hands the kernels a and b as they are (ensure_row_contiguous is off): a
transposed view, a slice, a broadcast arrives with its own strides, and the
buffer pointer at the array's own offset. The harness binds each NumPy view the
same way (mlx_sgemm.metal_check.binding.strided_buffer): the buffer is exactly the span the view can
address, with guard pages at its ends and NaN in the gaps between a slice's
rows, so a kernel that assumes any other layout reads NaN or faults.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlx_sgemm.bench.accuracy import relative_error
from mlx_sgemm.build import specs

from .harness import gemm
from .harness.checks import check, layout, replace_once, variant

METAL_SPECS = specs.specs("metal")

# (a layout, b layout), with odd sizes M, K, N that are multiples of no block.
M, K, N = 33, 17, 65
CASES = [
    ("row", "row"),  # NN
    ("row", "col"),  # NT: a @ b.T
    ("col", "row"),  # TN: a.T @ b
    ("col", "col"),  # TT
    ("slice", "slice"),  # row stride larger than the width
    ("strided", "neg"),  # no unit stride; negative strides
    ("neg", "strided"),
    ("bcast_rows", "bcast_cols"),  # stride 0 in one matrix dim
    ("bcast_cols", "bcast_rows"),
    ("scalar", "col"),  # stride 0 in both: a one-element buffer
]


def case_id(case):
    return "-".join(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_stage_reads_any_layout(spec, case):
    rng = np.random.default_rng(1)
    a = layout((M, K), case[0], rng)
    b = layout((K, N), case[1], rng)
    check(spec, a, b)


@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_stage_reads_any_layout_batched(spec):
    """Batch dims too: a transposed and broadcast along the batch (stride 0), b
    a slice with its own batch stride; guard pages before the buffers."""
    rng = np.random.default_rng(2)
    a = np.broadcast_to(layout((1, 19, 37), "col", rng), (3, 19, 37))
    b = layout((3, 37, 21), "slice", rng)
    check(spec, a, b, align_end=False)
    # A strided batch dim that merges with another (4 = 2 x 2 entries of a).
    a = layout((2, 2, 19, 37), "neg", rng)
    b = layout((37, 21), "col", rng)
    check(spec, a, b, seed=3)


def test_layouts_are_what_they_claim():
    """The views handed to the kernels have the strides each case is about."""
    rng = np.random.default_rng(0)
    strides = {k: tuple(s // 4 for s in layout((5, 7), k, rng).strides) for k in
               ("row", "col", "slice", "strided", "neg", "bcast_rows", "bcast_cols", "scalar")}
    assert strides == {
        "row": (7, 1), "col": (1, 5), "slice": (24, 1), "strided": (42, 3), "neg": (-7, -1),
        "bcast_rows": (0, 1), "bcast_cols": (1, 0), "scalar": (0, 0),
    }


# ---- reads outside the operand are caught --------------------------------------------

# Cases where one column past the edge of the operand is outside the buffer or
# in a gap: the layouts whose misreads a row-major harness would never see.
GUARD_CASES = [("col", "col"), ("slice", "bcast_rows"), ("bcast_rows", "slice"),
               ("neg", "neg")]


@pytest.mark.parametrize("case", GUARD_CASES, ids=case_id)
@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_read_past_the_edge_of_a_strided_operand_is_caught(spec, case):
    """Each stage with its edge check off by one (a column past the last of A
    and of B): the read lands past the buffer, before it, or in a gap."""
    if "sgemm::load_tile" in spec.source() or "sgemm::copy_tile" in spec.source():
        mutant = variant(spec, header=replace_once(
            spec.header(), "(r < rows && c < cols) ?", "(r < rows && c <= cols) ?"))
        # Only the element path checks the edge: keep tile_async on it.
        if "sgemm::copy_tile" in spec.source():
            mutant = variant(mutant, header=replace_once(
                mutant.header_text, "(x.rs * int64_t(sizeof(T))) % 16 == 0", "false"))
    else:
        mutant = variant(spec, body=replace_once(spec.source(), "k < t.K", "k <= t.K"))
    rng = np.random.default_rng(4)
    a = layout((M, K), case[0], rng)
    b = layout((K, N), case[1], rng)
    for align_end in (True, False):
        try:
            c = gemm.matmul(mutant, a, b, align_end=align_end)
        except gemm.KernelError as e:
            assert e.kind == "out_of_bounds", str(e)
        else:
            assert relative_error(c, a, b) > 1e-3, "a read past the operand went unnoticed"


@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_a_stage_that_ignores_column_strides_fails(spec):
    """The layout tests have teeth: Operand reading p[r * rs + c] (row-major
    columns assumed) gives wrong products for a transposed b."""
    mutant = variant(spec, header=replace_once(
        spec.header(), "return p[r * rs + c * cs];", "return p[r * rs + c];"))
    rng = np.random.default_rng(5)
    a, b = layout((M, K), "row", rng), layout((K, N), "col", rng)
    try:
        c = gemm.matmul(mutant, a, b)
    except gemm.KernelError as e:
        assert e.kind == "out_of_bounds", str(e)
    else:
        assert relative_error(c, a, b) > 1e-3
