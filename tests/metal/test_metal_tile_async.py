"""tile_async and gemm (kernels/metal/tile_async.metal) in the Metal harness.

The simdgroup_async_copy kernel of Fast Matrix Multiply on an Apple GPU,
double buffered, for any M, N, K and layout, and with C = alpha A B + beta C_in
as gemm, for float32 operands and for operands of one half type (float16, or
bfloat16: kept in half tiles, their 2-byte elements fetched by the async copy).
Every case states which copy path each operand takes (the async copy, or the
element copy for layouts it does not suit and for `constant` operands), for
float32 and for halves, and the harness's count of async copies proves it. The
mutations show that the tests see the races double buffering invites, on both
paths and in every element type.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlx_sgemm.build import specs
from mlx_sgemm.dispatch.problem import plan

from .harness import gemm
from .harness.checks import check, gemm_error, layout, replace_once, variant
from .harness.elements import HALF_TYPES, element_view

TILE_ASYNC = specs.spec("tile_async", "metal")
GEMM = specs.spec("gemm", "metal")
ASYNC_SPECS = [TILE_ASYNC, GEMM]
BK = dict(TILE_ASYNC.template)["TILE_K"]
# Both operands of one element type: float32, or one half type (half tiles).
ELEMENT_TYPES = ("float32", "float16", "bfloat16")


def operands(case, seed=0, element_type="float32"):
    """(a, b) for a case, (a shape, a layout, b shape, b layout, ...), in ``element_type``."""
    a_shape, a_kind, b_shape, b_kind = case[:4]
    rng = np.random.default_rng(seed)
    return (element_view(layout(a_shape, a_kind, rng), element_type),
            element_view(layout(b_shape, b_kind, rng), element_type))


def async_copies(a, b, async_operands: int) -> int:
    """simdgroup async copies a launch issues: one per k-tile per threadgroup for
    each operand on the async path."""
    p = plan(a.shape, b.shape)
    tiles_m, tiles_n = p.tiles(TILE_ASYNC.block_m, TILE_ASYNC.block_n)
    return p.batch * tiles_m * tiles_n * math.ceil(p.K / BK) * async_operands


# (a shape, a layout, b shape, b layout, operands on the async path for float32,
# for halves). The async copy takes row-major operands in device memory whose
# rows are 16 bytes apart (K or N a multiple of 4 floats, of 8 halves);
# everything else goes element by element.
CASES = {
    "1x1x1": ((1, 1), "row", (1, 1), "row", 0, 0),  # both in `constant` memory
    "1x3x5": ((1, 5), "row", (5, 3), "row", 0, 0),  # a and b in `constant` memory
    "33x65x17": ((33, 17), "row", (17, 65), "row", 0, 0),  # rows not 16 bytes apart
    "127x129x131": ((127, 131), "row", (131, 129), "row", 0, 0),
    "64x64x16": ((64, 16), "row", (16, 64), "row", 2, 2),  # one whole block
    "127x132x68": ((127, 68), "row", (68, 132), "row", 2, 0),  # edges in M, N and K
    "127x136x72": ((127, 72), "row", (72, 136), "row", 2, 2),
    "129x72x52": ((129, 52), "row", (52, 72), "row", 2, 1),
    "127x129x68-NT": ((127, 68), "row", (68, 129), "col", 1, 0),  # b transposed
    "33x72x65-TN": ((33, 65), "col", (65, 72), "row", 1, 1),  # a transposed
    "33x65x17-TT": ((33, 17), "col", (17, 65), "col", 0, 0),
    "slices": ((45, 35), "slice", (35, 70), "strided", 1, 1),  # a: row stride 2 * 40
    "negative": ((45, 36), "neg", (36, 70), "neg", 0, 0),
    "broadcast": ((45, 36), "bcast_rows", (36, 70), "bcast_cols", 0, 0),  # stride 0
    "batched-broadcast": ((2, 1, 40, 36), "row", (3, 36, 44), "row", 2, 0),
    "batched-transposed": ((3, 19, 37), "col", (3, 37, 21), "col", 0, 0),
}


@pytest.mark.parametrize("element_type", ELEMENT_TYPES)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("spec", ASYNC_SPECS, ids=lambda s: s.stage)
def test_products_and_copy_paths(spec, case, element_type):
    a, b = operands(case, element_type=element_type)
    stats = {}
    kwargs = {}
    if spec is GEMM:
        p = plan(a.shape, b.shape)
        kwargs = dict(c=np.random.default_rng(9).standard_normal(p.out_shape), alpha=1.5,
                      beta=-0.75)
    check(spec, a, b, stats=stats, **kwargs)
    assert stats["async_copies"] == async_copies(a, b, case[4 if element_type == "float32" else 5])


def test_stride_zero_batch_of_row_major_matrices_takes_the_async_path():
    """b broadcast along the batch (batch stride 0), its matrices row-major."""
    rng = np.random.default_rng(3)
    a = layout((3, 50, 24), "row", rng)
    b = np.broadcast_to(layout((24, 40), "row", rng), (3, 24, 40))
    stats = {}
    check(TILE_ASYNC, a, b, stats=stats, align_end=False)
    assert stats["async_copies"] == async_copies(a, b, 2)


# ---- alpha and beta -------------------------------------------------------------------


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (-2.0, 0.5), (0.25, -3.0)])
@pytest.mark.parametrize("case", ["127x132x68", "127x129x131", "1x3x5"])
def test_gemm_alpha_beta(case, alpha, beta):
    a, b = operands(CASES[case], seed=1)
    p = plan(a.shape, b.shape)
    c = np.random.default_rng(2).standard_normal(p.out_shape).astype(np.float32)
    check(GEMM, a, b, c=c, alpha=alpha, beta=beta)


def test_gemm_broadcasts_c():
    """c of shape (N,) for a batched product: one row for every row of every entry."""
    a, b = operands(CASES["batched-broadcast"], seed=4)
    c = np.random.default_rng(5).standard_normal(44).astype(np.float32)
    check(GEMM, a, b, c=c, alpha=0.5, beta=2.0)


def test_gemm_with_beta_zero_does_not_read_c():
    """beta = 0: C_in may hold NaN (as BLAS allows); the result is alpha A B."""
    a, b = operands(CASES["127x132x68"], seed=6)
    c = np.full((127, 132), np.nan, dtype=np.float32)
    out = gemm.matmul(GEMM, a, b, c=c, alpha=2.0, beta=0.0)
    assert gemm_error(out, a, b, c=c, alpha=2.0, beta=0.0) < 1e-6


def test_gemm_alpha_zero_beta_one_is_c():
    a, b = operands(CASES["33x65x17"], seed=7)
    c = np.random.default_rng(8).standard_normal((33, 65)).astype(np.float32)
    out = gemm.matmul(GEMM, a, b, c=c, alpha=0.0, beta=1.0)
    np.testing.assert_array_equal(out, c)


def test_gemm_swapping_alpha_and_beta_is_caught():
    body = replace_once(GEMM.source(), "c_in + t.c_offset, scalars[0], scalars[1]",
                        "c_in + t.c_offset, scalars[1], scalars[0]")
    a, b = operands(CASES["127x132x68"], seed=1)
    c = np.random.default_rng(2).standard_normal((127, 132)).astype(np.float32)
    out = gemm.matmul(variant(GEMM, body=body), a, b, c=c, alpha=-2.0, beta=0.5)
    assert gemm_error(out, a, b, c=c, alpha=-2.0, beta=0.5) > 1e-3


# ---- mutations: races of the double buffer, on both copy paths -------------------------

# Two entries of 2 x 3 blocks (12 threadgroups) with 5 k-tiles each; async: both
# operands by the async copy (rows 16 bytes apart in every element type);
# element: both transposed, element by element.
PATHS = {
    "async": ((2, 127, 72), "row", (72, 136), "row"),
    "element": ((2, 127, 72), "col", (72, 136), "col"),
}

LOOP_BARRIER = (
    "  threadgroup_barrier(mem_flags::mem_threadgroup);  // kt + 1 complete, kt's buffers free\n"
)
PROLOGUE_BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);  // k-tile 0 is complete\n"
LOOP_WAIT = "  if (sg == 0 && copies > 0) __metal_wait_simdgroup_events(copies, events);\n"

MUTATIONS = {
    # No barrier between the buffers: a simdgroup runs ahead into the next
    # k-tile while another still multiplies from the buffer being refilled.
    "no-barrier-between-buffers": [(LOOP_BARRIER, "")],
    # The copy of k-tile kt + 1 goes into the buffers that k-tile kt is read
    # from (and the other pair is never filled) ...
    "next-copy-overwrites-current": [("const int next = cur ^ 1;", "const int next = cur;")],
    # ... or, still alternating nothing, into the one pair of buffers both use:
    # the overwrite itself is all there is to see.
    "one-buffer-for-copy-and-multiply": [
        ("const int cur = kt % 2;", "const int cur = 0;"),
        ("const int next = cur ^ 1;", "const int next = cur;"),
    ],
    "no-barrier-after-first-copy": [(PROLOGUE_BARRIER, "")],
}


def assert_caught(mutant, case, check, element_type):
    """The checker reports the mutation (``check`` finds it: racecheck and
    initcheck do not depend on the schedule, so one seed is enough), and the
    results are wrong."""
    a, b = operands(case, element_type=element_type)
    c, report = gemm.checked(mutant, a, b)
    assert report.by_check(check), f"the mutation went unnoticed by {check}: {report}"
    assert c is not None and gemm_error(c, a, b) > 1e-3


@pytest.mark.parametrize("element_type", ELEMENT_TYPES)
@pytest.mark.parametrize("path", PATHS, ids=PATHS.keys())
@pytest.mark.parametrize("mutation", MUTATIONS, ids=MUTATIONS.keys())
def test_double_buffer_race_is_caught(mutation, path, element_type):
    body = TILE_ASYNC.source()
    for old, new in MUTATIONS[mutation]:
        body = replace_once(body, old, new)
    assert_caught(variant(TILE_ASYNC, body=body), PATHS[path], "racecheck", element_type)


@pytest.mark.parametrize("element_type", ELEMENT_TYPES)
def test_reading_a_k_tile_before_its_copy_is_waited_on_is_caught(element_type):
    """The loop not waiting for the next k-tile's copy: its buffers are read
    before the copy engine has filled them (initcheck)."""
    mutant = variant(TILE_ASYNC, body=replace_once(TILE_ASYNC.source(), LOOP_WAIT, ""))
    assert_caught(mutant, PATHS["async"], "initcheck", element_type)


@pytest.mark.parametrize("element_type", ELEMENT_TYPES)
def test_async_copy_of_a_whole_tile_past_the_edge_is_caught(element_type):
    """The async copy reading a whole k-tile where it overhangs the matrix (no
    zero fill) reads past the end of the operand's buffer."""
    header = replace_once(
        TILE_ASYNC.header(),
        "const int rows = min(ROWS, x.rows - r0), cols = min(COLS, x.cols - c0);",
        "const int rows = ROWS, cols = COLS;",
    )
    a, b = operands(CASES["127x136x72"], element_type=element_type)
    with pytest.raises(gemm.KernelError) as err:
        gemm.matmul(variant(TILE_ASYNC, header=header), a, b)
    assert err.value.kind == "out_of_bounds"
    assert "past the end of buffer(" in err.value.message


@pytest.mark.parametrize("element_type", HALF_TYPES)
def test_async_copy_of_halves_sized_as_floats_is_caught(element_type):
    """The async copy told the elements are 4 bytes where the half tiles hold
    2-byte ones: it writes past the tiles and reads past the operands' rows
    (memcheck), and the results are wrong."""
    header = replace_once(TILE_ASYNC.header(), "sizeof(T), alignof(T), (threadgroup void*)",
                          "sizeof(float), alignof(float), (threadgroup void*)")
    a, b = operands(CASES["127x136x72"], element_type=element_type)
    c, report = gemm.checked(variant(TILE_ASYNC, header=header), a, b)
    assert [f for f in report.findings if f.kind == "out_of_bounds"], f"went unnoticed: {report}"
    assert c is None or gemm_error(c, a, b) > 1e-3


@pytest.mark.parametrize("element_type", ELEMENT_TYPES)
def test_without_the_fallback_a_transposed_operand_is_wrong(element_type):
    """The async copy given a transposed operand as if it were row-major."""
    header = replace_once(
        TILE_ASYNC.header(),
        "return x.cs == 1 && x.rs >= x.cols && (x.rs * int64_t(sizeof(T))) % 16 == 0;",
        "return true;")
    a, b = operands(PATHS["element"], element_type=element_type)
    c, report = gemm.checked(variant(TILE_ASYNC, header=header), a, b)
    assert gemm_error(c, a, b) > 1e-3, report
