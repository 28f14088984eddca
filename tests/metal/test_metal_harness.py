"""Every Metal kernel, compiled and executed on the CPU by the Metal harness.

tests/metal/harness/ compiles the exact source MLX would hand Apple's compiler
(signatures.metal_source on the registry's KernelSpec) with clang against a
Metal compatibility header, and runs a dispatch with fibers for threads (see
gemm.py and runtime.cpp). Needs clang: `pip install ziglang` provides one.
These tests fail, never skip, when it is missing: CI must run them.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlx_sgemm.bench.accuracy import relative_error
from mlx_sgemm.build import signatures, sources, specs
from mlx_sgemm.dispatch.problem import plan
from mlx_sgemm.metal_check import binding, compiler

from .harness import checks, gemm
from .harness.checks import operands, replace_once, variant
from .harness.elements import HALF_TYPES, element_view, in_element_type, values

METAL_SPECS = specs.specs("metal")

# (a shape, b shape): none a multiple of any block. (1, 5) @ (5, 3) puts a in
# the constant address space and b in device memory; (1, 1) @ (1, 1) both in
# constant. The batched case broadcasts each operand along one dimension.
SHAPES = [
    ((1, 1), (1, 1)),
    ((1, 5), (5, 3)),
    ((33, 17), (17, 65)),
    ((127, 131), (131, 129)),
    ((2, 1, 19, 37), (3, 37, 21)),
]


def check(spec, a_shape, b_shape, **kwargs):
    checks.check(spec, *operands(a_shape, b_shape), **kwargs)


# ---- the kernels ------------------------------------------------------------------


def test_every_metal_file_has_a_spec():
    """A .metal file without a spec would never be run here: fail instead."""
    metal_dir = sources.kernels_dir() / "metal"
    files = {p.name for p in metal_dir.glob("*.metal")}
    covered = {s.source_file for s in METAL_SPECS}
    assert files, f"no Metal kernels found in {metal_dir}"
    assert files == covered, (
        f"without a spec: {sorted(files - covered)}; spec without a file: "
        f"{sorted(covered - files)}"
    )


@pytest.mark.parametrize("a_shape,b_shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_stage_matches_float64_reference(spec, a_shape, b_shape):
    check(spec, a_shape, b_shape)


@pytest.mark.parametrize("spec", [s for s in METAL_SPECS if "c_in" not in s.input_names],
                         ids=lambda s: s.stage)
def test_stage_splits_k(spec):
    """Split-K (Plan.params): 3 stretches of 64 (the last 3) of K = 131, one partial
    product each, batched and broadcast, guard pages around every buffer."""
    a_shape, b_shape = (2, 1, 19, 131), (3, 131, 21)
    assert plan(a_shape, b_shape).k_split_length(3) == 64
    check(spec, a_shape, b_shape, k_splits=3)


@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_stage_with_buffer_starts_against_guard_pages(spec):
    """The same with the guard page before each buffer (catches reads before the start)."""
    check(spec, (33, 17), (17, 65), align_end=False)


@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_stage_under_other_schedules(spec):
    check(spec, (2, 1, 19, 37), (3, 37, 21), seed=7)


@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_harness_compiles_what_mlx_compiles(spec):
    """The unit clang compiles is MLX's source, line for line, but for the documented edits."""
    _, inputs = gemm.launch_inputs(spec, np.zeros((2, 1, 19, 37)), np.zeros((3, 37, 21)))
    infos = gemm.array_infos(inputs)
    prog = gemm.program(spec, infos)
    assert prog.mlx_source == signatures.metal_source(spec, infos)
    unit = prog.unit.split('#line 1 "launcher"')[0].splitlines()[2:]
    mlx = prog.mlx_source.splitlines()
    assert len(unit) == len(mlx)
    for ours, theirs in zip(unit, mlx):
        if ours != theirs:
            assert ("threadgroup_var<" in ours and theirs.lstrip().startswith("threadgroup ")) or (
                theirs.startswith("template [[host_name(")
            ), (ours, theirs)


# ---- the harness's own semantics ------------------------------------------------------

ATTRIBUTES_BODY = """
// Each thread writes where it is, in grid order (x fastest).
const uint i = (thread_position_in_grid.z * threads_per_grid.y + thread_position_in_grid.y)
    * threads_per_grid.x + thread_position_in_grid.x;
device float* out = c + 4 * i;
out[0] = float(threadgroup_position_in_grid.x + 100 * threadgroup_position_in_grid.y);
out[1] = float(thread_index_in_threadgroup);
out[2] = float(threads_per_threadgroup.x * threads_per_threadgroup.y);
out[3] = float(simdgroup_index_in_threadgroup * 32 + thread_index_in_simdgroup);
"""


def raw_dispatch(body, grid, threadgroup, out_floats, *, a=None, **kwargs):
    """Dispatch a hand-written body with the sgemm signature on small inputs."""
    spec = variant(specs.spec("naive", "metal"), body=body)
    a = np.arange(16, dtype=np.float32) if a is None else a
    b = np.ones(16, dtype=np.float32)
    params = np.zeros(8, dtype=np.int32)
    prog = gemm.program(spec, gemm.array_infos([a, b, params]))
    # Bound as MLX binds them: a view in place, at its own strides.
    buffers = [binding.strided_buffer(n, x)[0] for n, x in zip("ab", (a, b))]
    buffers.append(binding.Buffer("params", params, params.nbytes, elem_size=4))
    buffers.append(binding.Buffer("c", None, out_floats * 4, elem_size=4, output=True))
    assert prog.buffers == len(buffers)
    (out,) = gemm.dispatch(prog, buffers, grid, threadgroup, **kwargs)
    return np.frombuffer(out, dtype=np.float32)


def test_dispatch_threads_has_partial_edge_threadgroups():
    grid, group = (10, 3, 1), (4, 2, 1)
    out = raw_dispatch(ATTRIBUTES_BODY, grid, group, 4 * 30).reshape(3, 10, 4)
    for y in range(3):
        for x in range(10):
            width = 4 if x < 8 else 2  # the last column of groups is partial
            height = 2 if y < 2 else 1
            local = (x % 4) + (y % 2) * width
            assert out[y, x, 0] == x // 4 + 100 * (y // 2)
            assert out[y, x, 1] == local
            assert out[y, x, 2] == width * height
            assert out[y, x, 3] == local  # simdgroups: 32 consecutive threads


def test_simdgroup_matrix_load_multiply_store():
    """An 8x8 product through the collective matrix functions, with origin and transpose."""
    body = """
simdgroup_float8x8 x, y, z;
simdgroup_load(x, a, 16, ulong2(8, 0));          // columns 8..15 of a 8x16 matrix
simdgroup_load(y, b, 8, ulong2(0, 0), true);     // transposed
simdgroup_multiply(z, x, y);
simdgroup_store(z, c, 8);
simdgroup_float8x8 d = simdgroup_float8x8(2.0f);  // diagonal
simdgroup_multiply_accumulate(z, d, z, z);        // 3 z
simdgroup_store(z, c + 64, 8);
"""
    a = np.random.default_rng(1).standard_normal(128).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(64).astype(np.float32)
    spec = variant(specs.spec("naive", "metal"), body=body)
    params = np.zeros(8, dtype=np.int32)
    infos = [signatures.ArrayInfo("float32", 1, x.size) for x in (a, b)]
    infos.append(signatures.ArrayInfo("int32", 1, 8))
    prog = gemm.program(spec, infos)
    bufs = [binding.Buffer("a", a, a.nbytes, elem_size=4), binding.Buffer("b", b, b.nbytes, elem_size=4),
            binding.Buffer("params", params, params.nbytes, elem_size=4), binding.Buffer("c", None, 512, elem_size=4, output=True)]
    (out,) = gemm.dispatch(prog, bufs, (32, 1, 1), (32, 1, 1))
    out = np.frombuffer(out, dtype=np.float32).reshape(2, 8, 8)
    ref = a.reshape(8, 16)[:, 8:].astype(np.float64) @ b.reshape(8, 8).T
    np.testing.assert_allclose(out[0], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], 3 * ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("element_type", HALF_TYPES)
def test_half_simdgroup_matrices_multiply_into_float32_accumulators(element_type):
    """simdgroup_multiply_accumulate of two half (bfloat) matrices into float
    ones, as the kernels with half tiles use it: the products and sums in
    float32, nothing rounded to the half type (a half result would be off by
    ~1e-3, bfloat's by ~1e-2)."""
    metal_type = {"float16": "half", "bfloat16": "bfloat"}[element_type]
    body = f"""
simdgroup_matrix<{metal_type}, 8, 8> x, y;
simdgroup_load(x, a, 8);
simdgroup_load(y, b, 8);
simdgroup_float8x8 z = make_filled_simdgroup_matrix<float, 8, 8>(1.0f / 3.0f);
simdgroup_multiply_accumulate(z, x, y, z);
simdgroup_store(z, c, 8);
"""
    rng = np.random.default_rng(3)
    a, b = (in_element_type(rng.standard_normal(64).astype(np.float32), element_type) for _ in range(2))
    spec = variant(specs.spec("naive", "metal"), body=body)
    params = np.zeros(8, dtype=np.int32)
    prog = gemm.program(spec, gemm.array_infos([a, b, params]))
    bufs = [binding.Buffer("a", a, a.nbytes, elem_size=2), binding.Buffer("b", b, b.nbytes, elem_size=2),
            binding.Buffer("params", params, params.nbytes, elem_size=4),
            binding.Buffer("c", None, 256, elem_size=4, output=True)]
    (out,) = gemm.dispatch(prog, bufs, (32, 1, 1), (32, 1, 1))
    ref = values(a).reshape(8, 8) @ values(b).reshape(8, 8) + np.float64(np.float32(1 / 3))
    np.testing.assert_allclose(np.frombuffer(out, dtype=np.float32).reshape(8, 8), ref, rtol=1e-6, atol=1e-6)


def test_constant_operand_cannot_feed_simdgroup_load():
    """As on Apple's compiler: simdgroup_load takes device or threadgroup memory only."""
    body = "simdgroup_float8x8 x; simdgroup_load(x, a, 8); simdgroup_store(x, c, 8);"
    with pytest.raises(gemm.CompileError, match="simdgroup_load"):
        raw_dispatch(body, (32, 1, 1), (32, 1, 1), 64, a=np.ones(4, dtype=np.float32))


def test_constant_pointer_does_not_convert_to_device():
    body = "const device float* p = a; c[0] = p[0];"
    raw_dispatch(body, (1, 1, 1), (1, 1, 1), 1)  # a device input: fine
    with pytest.raises(gemm.CompileError, match="with an lvalue of type 'constant float const"):
        raw_dispatch(body, (1, 1, 1), (1, 1, 1), 1, a=np.ones(4, dtype=np.float32))


def test_unsupported_attribute_is_refused():
    with pytest.raises(gemm.KernelError, match=r"\[\[function_constant"):
        raw_dispatch("[[function_constant(0)]] c[0] = 1;", (1, 1, 1), (1, 1, 1), 1)


@pytest.mark.parametrize(
    "body,kind",
    [
        # Lanes of one simdgroup at different matrix operations.
        ("simdgroup_float8x8 x = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);\n"
         "if (thread_index_in_simdgroup < 16) simdgroup_store(x, c, 8);\n", "divergence"),
        # Lanes passing different pointers to one collective load.
        ("simdgroup_float8x8 x;\n"
         "simdgroup_load(x, a + (thread_index_in_simdgroup % 2), 8);\n"
         "simdgroup_store(x, c, 8);\n", "nonuniform"),
        # Threads of a threadgroup at different barriers.
        ("if (thread_index_in_threadgroup < 32) threadgroup_barrier(mem_flags::mem_none);\n"
         "else threadgroup_barrier(mem_flags::mem_threadgroup);\n", "divergence"),
        # Half the lanes at a barrier, the others waiting for them in a matrix operation.
        ("simdgroup_float8x8 x = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);\n"
         "if (thread_index_in_simdgroup < 16) threadgroup_barrier(mem_flags::mem_none);\n"
         "simdgroup_store(x, c, 8);\n", "deadlock"),
        # A write to an input.
        ("device float* p = (device float*)a; p[0] = 1.0f;", "read_only"),
        # A fixed-size array indexed past its end.
        ("threadgroup float t[4];\nt[thread_index_in_threadgroup] = 1.0f;\n", "out_of_bounds"),
    ],
    ids=["divergent-lanes", "nonuniform-load", "divergent-barriers", "deadlock",
         "write-to-input", "threadgroup-array-overrun"],
)
def test_misbehaviour_is_reported(body, kind):
    a = np.ones(256, dtype=np.float32)
    with pytest.raises(gemm.KernelError) as err:
        raw_dispatch(body, (64, 1, 1), (64, 1, 1), 64, a=a)
    assert err.value.kind == kind, str(err.value)


ASYNC_COPY_BODY = """
threadgroup float tile[6][8];
if (simdgroup_index_in_threadgroup == 0) {
  thread _simdgroup_event_t* events[1];
  // A 4-row x 3-column tile of a 5-column matrix, from (row 0, column 1), into
  // a 6 x 8 threadgroup tile.
  events[0] = __metal_simdgroup_async_copy_2d(sizeof(float), alignof(float),
      (threadgroup void*)&tile[0][0], 8, 1, ulong2(8, 6),
      (const device void*)(a + SRC_OFFSET), 5, 1, ulong2(3, 4), long2(0), CLAMP_MODE);
  WAIT
}
threadgroup_barrier(mem_flags::mem_threadgroup);
const uint i = thread_index_in_threadgroup;
if (i < 48) c[i] = tile[i / 8][i % 8];
"""


def async_copy(clamp_mode=0, wait=True, src_offset="1", stats=None, report=None):
    body = (
        ASYNC_COPY_BODY.replace("CLAMP_MODE", str(clamp_mode))
        .replace("SRC_OFFSET", src_offset)
        .replace("WAIT", "__metal_wait_simdgroup_events(1, events);" if wait else "")
    )
    # The intrinsics as kernels/metal/sgemm/async_copy.h declares them (at
    # namespace scope), with the headers tile_async includes.
    base = specs.spec("naive", "metal")
    spec = variant(base, body=body, header=sources.headers_text("metal", "tile_async.metal"))
    a = np.arange(40, dtype=np.float32)
    b, params = np.ones(16, dtype=np.float32), np.zeros(8, dtype=np.int32)
    infos = [signatures.ArrayInfo("float32", 1, 40), signatures.ArrayInfo("float32", 1, 16),
             signatures.ArrayInfo("int32", 1, 8)]
    prog = gemm.program(spec, infos)
    bufs = [binding.Buffer("a", a, a.nbytes, elem_size=4), binding.Buffer("b", b, b.nbytes, elem_size=4),
            binding.Buffer("params", params, params.nbytes, elem_size=4), binding.Buffer("c", None, 48 * 4, elem_size=4, output=True)]
    (out,) = gemm.dispatch(prog, bufs, (64, 1, 1), (64, 1, 1), stats=stats, report=report)
    return np.frombuffer(out, dtype=np.float32).reshape(6, 8)


def test_async_copy_clamps_to_zero():
    expected = np.zeros((6, 8), dtype=np.float32)
    expected[:4, :3] = np.arange(40, dtype=np.float32).reshape(8, 5)[:4, 1:4]
    stats = {}
    np.testing.assert_array_equal(async_copy(clamp_mode=0, stats=stats), expected)
    assert stats == {"async_copies": 1}  # one copy of one simdgroup, not one per lane


def test_async_copy_clamps_to_edge():
    src = np.arange(40, dtype=np.float32).reshape(8, 5)[:4, 1:4]
    rows, cols = np.minimum(np.arange(6), 3), np.minimum(np.arange(8), 2)
    np.testing.assert_array_equal(async_copy(clamp_mode=1), src[rows][:, cols])


def test_async_copy_is_only_done_after_the_wait():
    """The tile holds nothing before the wait (NaN), and initcheck says where it is read."""
    reports = []
    assert np.isnan(async_copy(wait=False, report=reports)).all()
    (finding,) = reports[0].findings
    assert (finding.check, finding.kind) == ("initcheck", "uninitialized")
    assert "threadgroup variable 'tile'" in finding.message
    assert "c[i] = tile[i / 8][i % 8];" in finding.locations[0].text


def test_async_copy_with_lanes_disagreeing_is_reported():
    with pytest.raises(gemm.KernelError) as err:
        async_copy(src_offset="thread_index_in_simdgroup % 2")
    assert err.value.kind == "nonuniform"


def test_strided_buffer_binds_the_view_in_place():
    """The kernel's pointer is element (0, 0); the buffer spans exactly the view."""
    base = np.arange(40, dtype=np.float32).reshape(5, 8)
    view = base[4:0:-2, 1:7:3]  # rows 4, 2; columns 1, 4
    buf, strides = binding.strided_buffer("x", view)
    assert strides == [-16, 3]
    # Lowest element: (row 2, column 1), highest: (row 4, column 4).
    assert buf.data.size == (4 * 8 + 4) - (2 * 8 + 1) + 1
    assert buf.offset == 16 * 4
    flat = buf.data
    start = buf.offset // 4
    for (i, j), v in np.ndenumerate(view):
        assert flat[start + i * strides[0] + j * strides[1]] == v
    assert np.isnan(flat).sum() == flat.size - view.size  # the gaps


def test_strided_views_are_bound_in_place_with_guards():
    """A row-major kernel body reading one element past a strided view: in the
    gap after row 0 it reads NaN; past the last element it is out of bounds,
    with the page boundary at either end of the buffer."""
    view = np.arange(40, dtype=np.float32).reshape(5, 8)[:3, :4]  # row stride 8
    body = "c[0] = a[ROW * 8 + 4];"  # (ROW, 4): one past the end of row ROW
    buf, strides = binding.strided_buffer("a", view)
    assert strides == [8, 1] and buf.data.size == 2 * 8 + 4
    for align_end in (True, False):
        out = raw_dispatch(body.replace("ROW", "0"), (1, 1, 1), (1, 1, 1), 1, a=view,
                           align_end=align_end)
        assert np.isnan(out[0])
        with pytest.raises(gemm.KernelError) as err:
            raw_dispatch(body.replace("ROW", "2"), (1, 1, 1), (1, 1, 1), 1, a=view,
                         align_end=align_end)
        assert err.value.kind == "out_of_bounds"
        assert "4-byte read 4 bytes past the end of buffer(0) a" in err.value.message



# ---- mutations: the harness has teeth -------------------------------------------------

BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);"


def element_types(spec):
    """The element types both operands may share for ``spec``'s mutation tests:
    float32, and for a kernel with half tiles each half type (another
    instance, with tiles of that type)."""
    return ("float32", *HALF_TYPES) if spec.half_tiles else ("float32",)


def half_operands(a_shape, b_shape, element_type):
    """operands() rounded to ``element_type`` (harness.elements)."""
    return tuple(element_view(x, element_type) for x in operands(a_shape, b_shape))


def barrier_mutants():
    for spec in METAL_SPECS:
        body = spec.source()
        for i in range(body.count(BARRIER)):
            for t in element_types(spec):
                yield pytest.param(spec, i, t, id=f"{spec.stage}-barrier{i}-{t}")


@pytest.mark.parametrize("spec,which,element_type", list(barrier_mutants()))
def test_missing_threadgroup_barrier_is_reported_as_a_race(spec, which, element_type):
    """racecheck names the race a dropped barrier opens (whatever the schedule:
    one seed), and the results are wrong too."""
    body = spec.source()
    pos = -1
    for _ in range(which + 1):
        pos = body.index(BARRIER, pos + 1)
    mutant = variant(spec, body=body[:pos] + body[pos + len(BARRIER):])
    a, b = half_operands((127, 131), (131, 129), element_type)
    c, report = gemm.checked(mutant, a, b)
    races = report.by_check("racecheck")
    assert races, f"a race went unnoticed: {report}"
    assert "threadgroup variable" in races[0].message and len(races[0].locations) == 2
    assert checks.gemm_error(c, a, b) > 1e-3


@pytest.mark.parametrize(
    "spec", [s for s in METAL_SPECS if "sgemm::load_tile" in s.source() or "sgemm::copy_tile"
             in s.source()], ids=lambda s: s.stage)
def test_bounds_check_off_by_one_is_caught(spec):
    """sgemm/operand.h's Operand::at accepting column `cols`: a read one past a row of B."""
    header = replace_once(spec.header(), "(r < rows && c < cols) ?", "(r < rows && c <= cols) ?")
    mutant = variant(spec, header=header)
    a, b = operands((33, 17), (17, 65))
    try:
        c = gemm.matmul(mutant, a, b)
    except gemm.KernelError as e:
        assert e.kind == "out_of_bounds", str(e)
    else:
        assert relative_error(c, a, b) > 1e-3, "an off-by-one bounds check went unnoticed"


def test_store_bounds_check_off_by_one_is_reported_out_of_bounds():
    spec = specs.spec("naive", "metal")
    mutant = variant(spec, body=replace_once(spec.source(), "col < t.N", "col <= t.N"))
    with pytest.raises(gemm.KernelError) as err:
        gemm.matmul(mutant, *operands((33, 17), (17, 65)))
    # Column N: B is read one past the end of its last row before C is written.
    assert err.value.kind == "out_of_bounds"
    assert "past the end of buffer(3) b" in err.value.message


@pytest.mark.parametrize("spec,element_type", [
    pytest.param(s, t, id=f"{s.stage}-{t}") for s in METAL_SPECS if "store_accumulators" in s.source()
    for t in element_types(s)])
def test_edge_store_of_an_accumulator_past_the_last_column_is_reported(spec, element_type):
    """sgemm::store_8x8 writing column N of an 8x8 block that overhangs C's
    right edge: past the end of c from its last row (memcheck), and from the
    other rows onto column 0 of the next, which another simdgroup or
    threadgroup writes (racecheck, where that comes first)."""
    header = replace_once(spec.header(), "if (r < rows && c < cols) C[", "if (r < rows && c <= cols) C[")
    a, b = half_operands((33, 17), (17, 65), element_type)
    _, report = gemm.checked(variant(spec, header=header), a, b)
    past = [f for f in report.findings if f.kind == "out_of_bounds"]
    assert past, f"a store past the end of c went unnoticed: {report}"
    assert "past the end of buffer(" in past[0].message and ") c" in past[0].message


@pytest.mark.parametrize("align_end", [True, False])
def test_unchecked_load_past_the_end_is_reported(align_end):
    """tile_16 loading its B tile without the bounds check reads past the end of b."""
    spec = specs.spec("tile_16", "metal")
    body = replace_once(
        spec.source(),
        "sgemm::load_tile<TILE>(Bs, t.B, k0, t.col0, tid, TILE * TILE);",
        "Bs[ty][tx] = t.B(k0 + ty, col);",
    )
    mutant = variant(spec, body=body)
    a, b = operands((33, 17), (17, 65))
    try:
        c = gemm.matmul(mutant, a, b, align_end=align_end)
    except gemm.KernelError as e:
        assert e.kind == "out_of_bounds", str(e)
        assert "buffer(3) b" in e.message
    else:
        # With the guard page before the buffer instead, the overrun lands in
        # the canary-filled rest of the page: garbage in, wrong results out.
        assert not align_end
        assert relative_error(c, a, b) > 1e-3


def test_load_before_the_start_is_reported():
    spec = specs.spec("naive", "metal")
    body = replace_once(spec.source(), "t.A(row, k)", "t.A(row, k - 1)")
    with pytest.raises(gemm.KernelError) as err:
        gemm.matmul(variant(spec, body=body), *operands((33, 17), (17, 65)), align_end=False)
    assert err.value.kind == "out_of_bounds"
    assert "before the start of buffer(0) a" in err.value.message


def test_harness_sources_exist():
    for name in (*compiler.HEADERS, *(f"{o}.cpp" for o in compiler.RUNTIME_OBJECTS)):
        assert (compiler.HERE / name).is_file()
