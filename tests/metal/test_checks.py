"""Each check of mlx_sgemm.metal_check against kernels with planted bugs it must
catch (with the right lines and threads) and clean kernels it must pass,
this package's own among them.

Kernels are small mx.fast.metal_kernel bodies called through
metal_check.metal_kernel exactly as MLX's kernels are called.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlx_sgemm.build import specs
from mlx_sgemm.metal_check import metal_kernel

from .harness import gemm
from .harness.checks import operands
from .harness.elements import element_view, values

X = np.arange(64, dtype=np.float32)


def check(source, inputs=(X,), input_names=("x",), outputs=((64,),), output_names=("out",),
          grid=(64, 1, 1), threadgroup=(64, 1, 1), dtypes=None, **kwargs):
    kernel = metal_kernel(name="k", input_names=list(input_names), output_names=list(output_names),
                          source=source, source_path="k.metal",
                          **{k: kwargs.pop(k) for k in ("header", "atomic_outputs",
                                                         "ensure_row_contiguous") if k in kwargs})
    return kernel(inputs=list(inputs), output_shapes=list(outputs),
                  output_dtypes=dtypes or ["float32"] * len(outputs), grid=grid,
                  threadgroup=threadgroup, **kwargs)


def only(report, check_name, kind):
    """The report's one finding, of this check and kind."""
    assert [(f.check, f.kind) for f in report.findings] == [(check_name, kind)], str(report)
    return report.findings[0]


def found(source, check_name, kind, **kwargs):
    """Run ``source``: its outputs and its one finding, of this check and kind."""
    outputs, report = check(source, **kwargs)
    return outputs, only(report, check_name, kind)


def lines(finding):
    return sorted(loc.line for loc in finding.locations)


# ---- memcheck ----------------------------------------------------------------------

def test_memcheck_device_read_past_the_end():
    source = ("uint i = thread_position_in_grid.x;\n"
              "out[i] = x[i + 1];  // one past the end for the last thread\n")
    outputs, f = found(source, "memcheck", "out_of_bounds")
    assert "4-byte read 4 bytes past the end of buffer(0) x (256 bytes)" in f.message
    assert "thread (63, 0, 0) (simdgroup 1, lane 31)" in f.message
    assert lines(f) == [2] and f.locations[0].path == "k.metal"
    np.testing.assert_array_equal(outputs[0][:63], X[1:])  # the run went on


def test_memcheck_device_write_before_the_start():
    source = "uint i = thread_position_in_grid.x;\nout[int(i) - 1] = x[i];\n"
    _, f = found(source, "memcheck", "out_of_bounds", init_value=0.0)
    assert "4-byte write 4 bytes before the start of buffer(1) out" in f.message
    assert "thread (0, 0, 0)" in f.message and lines(f) == [2]
    # Without init_value the last element is also reported: nothing wrote it.
    _, report = check(source)
    assert [f.kind for f in report.findings] == ["out_of_bounds", "unwritten"]


def test_memcheck_far_past_the_end_stops_the_run():
    """An index 400 KB off reaches the buffer's guard pages: reported, then the run ends."""
    outputs, f = found("uint i = thread_position_in_grid.x;\nout[i] = x[i + 100000];\n",
                       "memcheck", "out_of_bounds")
    # Whichever thread ran first: thread t reads 4 * (t + 100000) - 256 + 4 bytes past.
    far = int(re.match(r"a 4-byte read (\d+) bytes past the end of buffer\(0\) x ", f.message)[1])
    assert 399748 <= far <= 400000
    assert outputs is None and lines(f) == [2]


def test_memcheck_inside_a_helper_is_named_at_the_kernels_call():
    """MLX's elem_to_loc told one dimension too many reads past x's shape and
    strides: inside the helper, named at the kernel's line that calls it."""
    source = ("uint i = thread_position_in_grid.x;\n"
              "uint loc = elem_to_loc(i, x_shape, x_strides, x_ndim + 1);\n"
              "out[i] = x[loc % 64];\n")
    _, report = check(source, inputs=(X.reshape(8, 8),), ensure_row_contiguous=False)
    assert [f.kind for f in report.findings] == ["out_of_bounds"] * 2, report
    assert [lines(f) for f in report.findings] == [[2], [2]]
    assert {f.message.split(" past the end of ")[1].split(" (")[0] for f in report.findings} == {
        "buffer(1) x_shape", "buffer(2) x_strides"}


def test_memcheck_threadgroup_overrun_through_a_pointer():
    """Past a threadgroup array through a pointer (no fixed-size array index to trap)."""
    source = ("threadgroup float tile[64];\n"
              "uint i = thread_position_in_threadgroup.x;\n"
              "threadgroup float* p = tile;\n"
              "p[i + 2] = x[i];\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "out[i] = i < 62 ? p[i + 2] : 0.0f;\n")
    _, f = found(source, "memcheck", "out_of_bounds")
    assert "write 0 bytes past the end of threadgroup variable 'tile'" in f.message or \
           "past the end of threadgroup variable 'tile'" in f.message, f.message
    assert lines(f) == [4] and f.count == 2


@pytest.mark.parametrize("array", ["threadgroup float t[4];", "float t[4] = {0, 1, 2, 3};"])
def test_memcheck_an_index_past_a_fixed_size_array_names_it_and_the_run_goes_on(array):
    """A threadgroup or thread-local array indexed directly past its end: the
    variable, the index and the line, and the run goes on to its outputs."""
    source = (f"{array}\nuint i = thread_position_in_threadgroup.x;\n"
              "if (i < 6) t[i] = 1.0f;\nout[i] = x[i];\n")
    outputs, f = found(source, "memcheck", "out_of_bounds")
    assert "outside the fixed-size array 't' of type" in f.message
    assert re.search(r"index [45] outside", f.message) and f.count == 2
    assert "float[4]" in f.message and lines(f) == [3]
    np.testing.assert_array_equal(outputs[0], X)


def test_memcheck_a_write_into_a_threadgroup_arrays_padding():
    """12 bytes of array in a 16-byte allocation: the 4 bytes past it are not the array's."""
    source = ("threadgroup float t[3];\nthreadgroup float* p = t;\n"
              "uint i = thread_position_in_threadgroup.x;\n"
              "if (i == 0) p[3] = 1.0f;\nout[i] = x[i];\n")
    _, f = found(source, "memcheck", "out_of_bounds")
    assert "4-byte write 0 bytes past the end of threadgroup variable 't'" in f.message or \
        "write 4 bytes past the end of threadgroup variable 't' (k.metal:1) (12 bytes)" in f.message
    assert lines(f) == [4]


def test_memcheck_write_to_an_input():
    _, report = check("device float* p = (device float*)x;\np[0] = 1.0f;\nout[0] = 0.0f;\n",
                      grid=(1, 1, 1))
    f = only(report, "memcheck", "read_only")
    assert "input buffer buffer(0) x" in f.message and lines(f) == [2]


def test_memcheck_clean_edge_guard():
    outputs, report = check("uint i = thread_position_in_grid.x;\nif (i < 60) out[i] = x[i];\n"
                            "else out[i] = 0.0f;\n", grid=(64, 1, 1), threadgroup=(32, 1, 1))
    report.assert_ok()
    np.testing.assert_array_equal(outputs[0], np.where(X < 60, X, 0))


# ---- racecheck ---------------------------------------------------------------------

REDUCTION = """
threadgroup float partial[64];
uint i = thread_position_in_threadgroup.x;
partial[i] = x[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 32; s > 0; s /= 2) {
  if (i < s) partial[i] += partial[i + s];
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i == 0) out[0] = partial[0];
"""


def test_racecheck_clean_reduction():
    outputs, report = check(REDUCTION, outputs=((1,),))
    report.assert_ok()
    assert outputs[0][0] == X.sum()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_racecheck_dropped_barrier_whatever_the_schedule(seed):
    """The barrier after the first store dropped: threads of simdgroup 0 read
    what simdgroup 1 writes. Reported with both threads and lines under every
    schedule, including those whose results happen to be right."""
    source = REDUCTION.replace("partial[i] = x[i];\nthreadgroup_barrier(mem_flags::mem_threadgroup);",
                               "partial[i] = x[i];\n")
    assert source != REDUCTION
    _, report = check(source, outputs=((1,),), seed=seed)
    races = report.by_check("racecheck")
    assert races, report
    race = next(f for f in races if lines(f) == [4, 7])
    assert "simdgroup 0" in race.message and "simdgroup 1" in race.message
    assert "threadgroup variable 'partial' (k.metal:2)" in race.message


def test_racecheck_barrier_without_mem_threadgroup_orders_nothing():
    source = REDUCTION.replace("partial[i] = x[i];\nthreadgroup_barrier(mem_flags::mem_threadgroup);",
                               "partial[i] = x[i];\nthreadgroup_barrier(mem_flags::mem_none);")
    _, report = check(source, outputs=((1,),))
    race = next(f for f in report.by_check("racecheck") if lines(f) == [4, 7])
    assert "orders no threadgroup memory" in race.message and "k.metal:5" in race.message


def test_racecheck_lanes_of_one_simdgroup_are_not_compared():
    """One simdgroup: lanes run in lockstep on Apple GPUs (no barrier needed among them)."""
    source = ("threadgroup float t[32];\nuint i = thread_position_in_threadgroup.x;\n"
              "t[i] = x[i];\nout[i] = t[31 - i];\n")
    _, report = check(source, outputs=((32,),), grid=(32, 1, 1), threadgroup=(32, 1, 1))
    assert not report.by_check("racecheck"), report


def test_racecheck_two_lanes_of_one_simdgroup_store_to_one_address_in_one_step():
    source = ("threadgroup float t[16];\nuint i = thread_position_in_threadgroup.x;\n"
              "t[i / 2] = x[i];  // lanes 2k and 2k + 1 together\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\nout[i] = t[i / 2];\n")
    _, f = found(source, "racecheck", "race", outputs=((32,),), grid=(32, 1, 1),
                 threadgroup=(32, 1, 1))
    assert "in the same step" in f.message and "simdgroup 0" in f.message
    assert "threadgroup variable 't'" in f.message and lines(f) == [3, 3]


def test_racecheck_lanes_storing_to_one_address_in_different_steps_do_not_race():
    """Lane k stores in iteration k: in lockstep, one lane at a time."""
    source = ("threadgroup float t[1];\nuint i = thread_position_in_threadgroup.x;\n"
              "for (uint k = 0; k < 32; ++k) {\n  if (k == i) t[0] = x[i];\n}\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\nout[i] = t[0];\n")
    _, report = check(source, outputs=((32,),), grid=(32, 1, 1), threadgroup=(32, 1, 1))
    report.assert_ok()


def test_racecheck_two_threadgroups_write_one_output_element():
    source = "uint i = thread_position_in_grid.x;\nout[i % 32] = x[i];\n"
    _, f = found(source, "racecheck", "race", outputs=((32,),), threadgroup=(32, 1, 1))
    assert "from two threadgroups without atomics" in f.message and "buffer(1) out" in f.message
    assert "threadgroup (0, 0, 0)" in f.message and "threadgroup (1, 0, 0)" in f.message
    assert lines(f) == [2, 2] and f.count == 32


def test_racecheck_two_threadgroups_adding_atomically_do_not_race():
    source = ("uint i = thread_position_in_grid.x;\n"
              "atomic_fetch_add_explicit(&out[i % 32], x[i], memory_order_relaxed);\n")
    outputs, report = check(source, outputs=((32,),), threadgroup=(32, 1, 1),
                            atomic_outputs=True, init_value=0.0)
    report.assert_ok()
    np.testing.assert_array_equal(outputs[0], X[:32] + X[32:])


def test_racecheck_atomics_do_not_race():
    source = ("threadgroup atomic_int count;\nuint i = thread_position_in_threadgroup.x;\n"
              "if (i == 0) atomic_store_explicit(&count, 0, memory_order_relaxed);\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "out[i] = float(atomic_load_explicit(&count, memory_order_relaxed));\n")
    outputs, report = check(source)
    report.assert_ok()
    assert (outputs[0] == 64).all()


# ---- synccheck ---------------------------------------------------------------------

SYNC_BUGS = {
    "barrier-in-a-branch": (
        ("uint i = thread_position_in_threadgroup.x;\n"
         "if (i < 40) threadgroup_barrier(mem_flags::mem_threadgroup);\n"
         "else threadgroup_barrier(mem_flags::mem_threadgroup);\n"
         "out[i] = 0.0f;\n"),
        "divergence", ["k.metal:2", "k.metal:3"]),
    # Apple GPUs let the others go on, and so does the checker, after saying so.
    "barrier-after-return": (
        ("uint i = thread_position_in_threadgroup.x;\nout[i] = 0.0f;\n"
         "if (i >= 48) return;\n"
         "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
         "out[i] = 1.0f;\n"),
        "barrier_after_return", ["reached by 48 of the threadgroup's 64 threads"]),
    "simd-function-in-diverging-branches": (
        ("uint i = thread_position_in_grid.x;\nfloat v = x[i];\n"
         "if (thread_index_in_simdgroup < 16) v = simd_sum(v);\n"
         "else v = simd_max(v);\nout[i] = v;\n"),
        "divergence", ["simd_max", "simd_sum"]),
}


INACTIVE_LANES = {
    # The lanes that skip the call return: no deadlock, no divergence at a barrier.
    "skipping-lanes-return": ("uint i = thread_position_in_grid.x;\n"
                              "if (thread_index_in_simdgroup >= 16) return;\n"
                              "out[i] = simd_sum(x[i]);\n",
                              "lanes 16-31 had returned from the kernel"),
    # They go on to a barrier the callers reach after the call.
    "skipping-lanes-at-a-barrier": ("uint i = thread_position_in_grid.x;\nfloat v = x[i];\n"
                                    "if (thread_index_in_simdgroup < 16) v = simd_sum(v);\n"
                                    "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                                    "out[i] = v;\n",
                                    "lanes 16-31 wait at the threadgroup_barrier at k.metal:4"),
}


@pytest.mark.parametrize("case", INACTIVE_LANES, ids=INACTIVE_LANES.keys())
def test_synccheck_a_simd_function_with_inactive_lanes(case):
    """Reported whatever the skipping lanes do next; the run goes on, the
    result covering the active lanes, as on an Apple GPU."""
    source, fragment = INACTIVE_LANES[case]
    outputs, f = found(source, "synccheck", "inactive_lanes", init_value=0.0)
    assert "simd_sum called by 16 of the 32 lanes of simdgroup" in f.message and fragment in f.message
    assert lines(f) == [3] and f.count == 2  # once per simdgroup
    np.testing.assert_array_equal(outputs[0][:16], X[:16].sum())
    np.testing.assert_array_equal(outputs[0][32:48], X[32:48].sum())


def test_synccheck_a_shuffle_reading_an_inactive_lane():
    source = ("uint i = thread_position_in_grid.x;\n"
              "if (thread_index_in_simdgroup >= 24) { out[i] = 0.0f; return; }\n"
              "out[i] = simd_shuffle_down(x[i], 8);  // lanes 16-23 read lanes 24-31\n")
    _, report = check(source)
    reads = [f for f in report.findings if f.kind == "inactive_lane_read"]
    assert len(reads) == 1 and lines(reads[0]) == [3], report
    assert "lane 16 of simdgroup 0 reads lane 24, which is inactive" in reads[0].message
    assert reads[0].count == 16  # lanes 16-23 of both simdgroups


def test_synccheck_a_partial_simdgroup_is_not_inactive_lanes():
    """48 threads: the second simdgroup has 16 lanes, none inactive."""
    source = "uint i = thread_position_in_grid.x;\nout[i] = simd_sum(x[i]) + simd_shuffle_down(x[i], 1);\n"
    _, report = check(source, inputs=(X[:48],), outputs=((48,),), grid=(48, 1, 1),
                      threadgroup=(48, 1, 1))
    report.assert_ok()


@pytest.mark.parametrize("case", SYNC_BUGS, ids=SYNC_BUGS.keys())
def test_synccheck(case):
    source, kind, fragments = SYNC_BUGS[case]
    outputs, f = found(source, "synccheck", kind)
    assert all(text in f.message for text in fragments), f.message
    if kind == "barrier_after_return":
        assert lines(f) == [4] and outputs[0][:48].tolist() == [1.0] * 48
    else:
        assert outputs is None  # the run cannot go on


# ---- initcheck ---------------------------------------------------------------------

def test_initcheck_threadgroup_memory_read_before_any_write():
    source = ("threadgroup float t[64];\nuint i = thread_position_in_threadgroup.x;\n"
              "if (i < 32) t[i] = x[i];\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "out[i] = t[i];  // threads 32.. read what nobody wrote\n")
    _, f = found(source, "initcheck", "uninitialized")
    assert "threadgroup variable 't' (k.metal:1)" in f.message
    assert int(f.message.split(" at byte ")[1].split(",")[0]) >= 128
    assert lines(f) == [5] and f.count == 32


def test_initcheck_output_read_without_init_value():
    source = "uint i = thread_position_in_grid.x;\nout[i] += x[i];\n"
    _, f = found(source, "initcheck", "uninitialized")
    assert "buffer(1) out" in f.message and "init_value" in f.message and lines(f) == [2]
    outputs, report = check(source, init_value=1.0)
    report.assert_ok()
    np.testing.assert_array_equal(outputs[0], X + 1)


def test_initcheck_output_elements_never_written():
    source = "uint i = thread_position_in_grid.x;\nif (i < 63) out[i] = x[i];  // one short\n"
    _, f = found(source, "initcheck", "unwritten")
    assert "1 of the 64 elements of buffer(1) out were never written (the first: element 63)" in f.message
    _, report = check(source, init_value=0.0)
    report.assert_ok()


# ---- the report --------------------------------------------------------------------

def test_report_text_and_dict():
    _, report = check("uint i = thread_position_in_grid.x;\nout[i] = x[i + 1];\n")
    text = str(report)
    assert text.startswith("========= METAL CHECK k: grid (64, 1, 1)")
    assert "    at k.metal:2: out[i] = x[i + 1];" in text
    assert text.endswith("ERROR SUMMARY: 1 error")
    d = report.to_dict()
    assert d["ok"] is False and d["findings"][0]["locations"][0]["line"] == 2


def test_repeats_are_counted_as_repeats_past_the_findings_kept():
    """2100 lines each reading past the end, by 64 threads: 2048 distinct
    findings kept, the other 52 counted once each, their 64 repeats apart."""
    source = "uint i = thread_position_in_grid.x;\nfloat acc = 0.0f;\n" + "".join(
        f"acc += x[i + {64 + k}];\n" for k in range(2100)) + "out[i] = acc;\n"
    _, report = check(source)
    assert len(report.findings) == 2048 and all(f.count == 64 for f in report.findings)
    assert (report.dropped, report.dropped_times) == (52, 52 * 64)
    assert str(report).endswith("... and 52 more distinct findings not kept, 3328 times in all\n"
                                "========= ERROR SUMMARY: 2100 errors")


def test_one_deleted_barrier_is_a_few_errors():
    """tile_threads without its first barrier: a few findings by line, all
    kept (the runtime keeps them by code address, which an unrolled loop
    multiplies; they were counted past the runtime's table as thousands)."""
    from .harness.checks import variant

    spec = specs.spec("tile_threads", "metal")
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
    mutant = variant(spec, body=spec.source().replace(barrier, "", 1))
    _, report = gemm.checked(mutant, *operands((127, 131), (131, 129)))
    assert report.by_check("racecheck") and report.dropped == 0, str(report)
    assert str(report).endswith(f"ERROR SUMMARY: {len(report.findings)} errors")
    assert len(report.findings) <= 6


def test_header_lines_are_named_by_the_header_file():
    kernel = metal_kernel(
        name="k", input_names=["x"], output_names=["out"],
        header="inline float get(const device float* p, uint i) {\n  return p[i + 1];\n}\n",
        source="uint i = thread_position_in_grid.x;\nout[i] = get(x, i);\n",
        source_path="k.metal", header_path="h.metal")
    _, report = kernel(inputs=[X], output_shapes=[(64,)], output_dtypes=["float32"],
                       grid=(64, 1, 1), threadgroup=(64, 1, 1))
    (f,) = report.findings
    assert str(f.locations[0]) == "h.metal:2: return p[i + 1];"


# ---- this package's kernels pass every check -------------------------------------------

# (K, N): rows whose length is no multiple of 4 floats (8 halves) go element by
# element; K and N multiples of 8 (rows 16 bytes apart in every element type)
# take tile_async's async copies.
SHAPES = {"element-by-element": (21, 70), "async-copy": (24, 72)}
# Both operands of one element type: float32 for every kernel, each half type
# for those that keep it in half tiles (another instance).
KERNEL_ELEMENT_TYPES = [
    pytest.param(spec.stage, t, id=f"{spec.stage}-{t}") for spec in specs.specs("metal")
    if spec.stage != "tile_32" for t in ("float32", *(("float16", "bfloat16") if spec.half_tiles else ()))]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("stage,element_type", KERNEL_ELEMENT_TYPES)
def test_package_kernels_pass_every_check(stage, element_type, shape):
    """Edge tiles in M, N and K, a batch, both of tile_async's copy paths: nothing found."""
    spec = specs.spec(stage, "metal")
    k, n = SHAPES[shape]
    a, b = (element_view(x, element_type) for x in operands((2, 9 if stage == "small_m" else 37, k), (k, n)))
    stats: dict[str, int] = {}
    out, report = gemm.checked(spec, a, b, stats=stats)
    report.assert_ok()
    np.testing.assert_allclose(out, values(a) @ values(b), rtol=1e-5, atol=1e-5)
    if spec.source_file == "tile_async.metal":
        assert (stats["async_copies"] > 0) == (shape == "async-copy"), stats


def test_this_packages_kernels_are_named_by_their_metal_and_header_files():
    """A finding in a package kernel names kernels/metal/<file>:<line>, the
    line as written there (the compiled text drops comments and blank lines)."""
    from mlx_sgemm.build import sources

    from .harness.checks import replace_once, variant

    spec = specs.spec("tile_16", "metal")
    mutant = variant(spec, header=replace_once(spec.header(), "(r < rows && c < cols) ?",
                                               "(r < rows && c <= cols) ?"))
    _, report = gemm.checked(mutant, *operands((33, 17), (17, 65)))
    f = report.by_check("memcheck")[0]
    loc = f.locations[0]
    assert loc.path == "kernels/metal/sgemm/operand.h", str(report)
    written = (sources.kernels_dir() / "metal" / "sgemm" / "operand.h").read_text()
    assert loc.text.strip() and written.splitlines()[loc.line - 1].strip().startswith(
        loc.text.strip()[:20])
    assert "threadgroup variable" not in loc.path
    races = gemm.checked(variant(spec, body=spec.source().replace(
        "threadgroup_barrier(mem_flags::mem_threadgroup);", "", 1)),
        *operands((33, 17), (17, 65)))[1].by_check("racecheck")
    # The body lost a barrier's line: its lines no longer match the file's, and
    # it is named as MLX generates it rather than by wrong lines.
    assert races and "as MLX generates it" in races[0].locations[0].path


def test_pytest_shows_the_whole_report_of_a_failing_check(tmp_path):
    """report.assert_ok() fails with the report as written, not pytest's repr
    of it cut at 240 characters."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    test = tmp_path / "test_failing_kernel.py"
    test.write_text(
        "from mlx_sgemm.metal_check import metal_kernel\n"
        "import numpy as np\n\n"
        "def test_it():\n"
        "    k = metal_kernel(name='k', input_names=['x'], output_names=['out'],\n"
        "                     source='uint i = thread_position_in_grid.x;\\nout[i] = x[i + 1];\\n',\n"
        "                     source_path='k.metal')\n"
        "    _, report = k(inputs=[np.zeros(64, np.float32)], output_shapes=[(64,)],\n"
        "                  output_dtypes=['float32'], grid=(64, 1, 1), threadgroup=(64, 1, 1))\n"
        "    report.assert_ok()\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    for line in ("memcheck: out_of_bounds: a 4-byte read 4 bytes past the end of buffer(0) x",
                 "at k.metal:2: out[i] = x[i + 1];", "ERROR SUMMARY: 1 error"):
        assert line in run.stdout, run.stdout[-3000:]
