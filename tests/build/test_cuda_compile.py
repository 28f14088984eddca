"""Every CUDA kernel compiles for Hopper (sm_90a) exactly as MLX would build it.

The source is written by mlx_sgemm.build.signatures from the same KernelSpec the
registry hands to mx.fast.cuda_kernel, and compiled twice: by NVRTC with MLX's
options (the compiler MLX really uses: no C++ standard library), and by nvcc for
ptxas's resource report. MLX's own device header, which lives inside libmlx, is
replaced by a stub with the same includes and the two types our kernels use.
The GPU run compiles the real thing. The kernels that convert float16 and
bfloat16 operands on load compile for those element types too (by NVRTC; see
ELEMENT_TYPE_SPECS).

Set MLX_SGEMM_REQUIRE_CUDA_TOOLS=1 (CI does) to fail rather than skip when a
compiler is missing.
"""

import concurrent.futures
import os
import re
import shutil
import tempfile
from multiprocessing import get_context
from pathlib import Path

import pytest

from mlx_sgemm.build import signatures, sources, specs
from mlx_sgemm.dispatch import kernel_choice
from mlx_sgemm.dispatch.problem import plan
from mlx_sgemm.emulation import gpu, half_split

from .cuda_compilers import (
    MLX_UTILS,
    CompileError,
    find_libnvrtc,
    nvcc_compile,
    nvrtc_compile,
    nvrtc_compile_ptx,
)

REQUIRED = bool(os.environ.get("MLX_SGEMM_REQUIRE_CUDA_TOOLS"))
# Every registered stage, the tile_wgmma variants matmul picks on Hopper, the
# INT8 emulation's kernels, tile_async and tile_simdgroup as built for GPUs
# without Hopper's shared memory and setmaxnreg, and chapter 8's: half_wgmma's
# half_mma's, half_gemv's and half_gemv_one_row's instances, split_sum, the small-M kernels rounding C to a half type,
# and the pass that rounds tile_wgmma's A to TF32.
CUDA_SPECS = specs.specs("cuda") + [
    spec for precision in kernel_choice.PRECISIONS for spec in kernel_choice.wgmma_variants(precision)
    if spec not in specs.specs("cuda")
] + specs.emulation_specs("cuda") + [
    kernel_choice.stage_spec(stage, "cuda", wgmma=False) for stage in ("tile_async", "tile_simdgroup")
] + specs.half_wgmma_specs() + specs.half_mma_specs() + specs.half_gemv_specs() + specs.half_gemv_one_row_specs() + [
    specs.spec(stage, "cuda").reading(t, t).rounding_to(t)
    for stage in specs.ROUNDS_IN_KERNEL for t in ("float16", "bfloat16")
] + [specs.cuda_tf32_round()]


def needs(available: bool, what: str):
    if not available:
        if REQUIRED:
            pytest.fail(f"{what} is required (MLX_SGEMM_REQUIRE_CUDA_TOOLS) but missing")
        pytest.skip(f"{what} is not installed")


def full_source(spec) -> str:
    if spec.input_dtypes:
        return signatures.cuda_source(spec, signatures.declared_infos(spec))
    p = plan((3, 1, 33, 17), (2, 17, 65))
    inputs = signatures.operand_infos(spec, p.a_shape, p.b_shape, len(p.params(1, 1)))
    return signatures.cuda_source(spec, inputs)


# A kernel at its register limit (capped by KernelSpec.min_blocks, or at the
# hardware's 255) may spill a little outside its main loop; anything more means
# the tiling is wrong for the limit (hundreds of bytes). Below the limit,
# nothing may spill. The most today: tile_wgmma with SPLIT, 40 bytes before
# setmaxnreg and in the epilogue (tile_threads, which spilled 56-80 bytes in its
# k loop, spills none since its fragments are read a k ahead).
MAX_SPILL_BYTES_AT_LIMIT = 64


def check_resources(spec, report: str):
    # ptxas C7513: it made each wgmma wait for the one before (registers of a
    # product in flight written, or too few to keep them): correct, and 2-10x
    # slower (docs/performance-log.md, "tile_wgmma: when the consumers wait").
    assert "wgmma.mma_async instructions are serialized" not in report, report
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", report)]
    registers = [int(n) for n in re.findall(r"Used (\d+) registers", report)]
    assert spills and registers, f"no ptxas resource report:\n{report}"
    at_limit = spec.min_blocks or max(registers) == 255
    assert max(spills) <= (MAX_SPILL_BYTES_AT_LIMIT if at_limit else 0), report


@pytest.mark.parametrize("spec", CUDA_SPECS, ids=lambda s: f"{s.stage}-{s.block_m}x{s.block_n}")
def test_nvrtc_compiles_as_mlx_does(spec, request):
    needs(find_libnvrtc() is not None, "libnvrtc (pip install nvidia-cuda-nvrtc)")
    check_resources(spec, built(request, spec)[0])


# The instances of the kernels that read float16 / bfloat16 operands and
# convert them on load (specs.element_type_instances), in the pairs of element
# types that put each type in each operand and every mix of sizes (2 and 2,
# 2 and 4, 4 and 2 bytes): the other pairs differ from these only in which of
# the same conversions meets which operand. Compiled by NVRTC, the compiler
# MLX uses, with ptxas's report (nvcc's check of the float32 instances covers
# the offline compiler), all at once on the machine's cores: one at a time
# they would add half a minute to the suite.
COMPILED_PAIRS = (("float16", "bfloat16"), ("bfloat16", "float32"), ("float32", "float16"))
ELEMENT_TYPE_SPECS = [s for s in specs.element_type_instances("cuda") if s.operand_types in COMPILED_PAIRS]


def type_id(spec) -> str:
    return f"{spec.stage}-{spec.operand_types[0]}@{spec.operand_types[1]}"


def build_with_nvrtc(spec):
    """NVRTC's (log, PTX) for spec, or the error it raised (for the test of that spec)."""
    try:
        return nvrtc_compile_ptx(full_source(spec))
    except CompileError as e:
        return e


def build_with_nvcc(spec_and_arch):
    """nvcc's ptxas report for (spec, arch), or the error it raised."""
    spec, arch = spec_and_arch
    with tempfile.TemporaryDirectory() as workdir:
        try:
            return nvcc_compile(full_source(spec), Path(workdir), arch)
        except CompileError as e:
            return e


def in_processes(build, items) -> dict:
    """item -> build(item) for every item, on all of the machine's cores, each
    in a process of its own (NVRTC compiles one program at a time in a
    process; nvcc is a process of its own anyway). One at a time, the
    compiles were most of the suite's time."""
    with concurrent.futures.ProcessPoolExecutor(os.cpu_count() or 1, mp_context=get_context("fork")) as pool:
        return dict(zip(items, pool.map(build, items)))


# The tests that read a build, each: (the build, its key from the test's
# parameters). The first such test to run builds what every selected test of
# the session will read, all at once (in_processes).
BUILDS_OF = {
    "test_nvrtc_compiles_as_mlx_does": (build_with_nvrtc, lambda p: p["spec"]),
    "test_no_generic_memory_accesses": (build_with_nvrtc, lambda p: p["spec"]),
    "test_nvrtc_compiles_every_element_type": (build_with_nvrtc, lambda p: p["spec"]),
    "test_no_generic_memory_accesses_for_any_element_type": (build_with_nvrtc, lambda p: p["spec"]),
    "test_nvcc_compiles_for_sm90a": (build_with_nvcc, lambda p: (p["spec"], "90a")),
    "test_nvcc_compiles_half_mma_for_ampere_and_ada": (build_with_nvcc, lambda p: (p["spec"], p["arch"])),
}
_built: dict = {}  # (build, key) -> its result, or the error it raised


def built(request, key):
    """The build the test asking (``request``) reads for ``key``: its result,
    or the error it raised, raised here."""
    build = BUILDS_OF[request.node.originalname][0]
    if (build, key) not in _built:
        wanted = {key}
        for item in request.session.items:
            uses = BUILDS_OF.get(getattr(item, "originalname", ""))
            if uses and uses[0] is build and hasattr(item, "callspec"):
                wanted.add(uses[1](item.callspec.params))
        wanted = [k for k in wanted if (build, k) not in _built]
        _built.update({(build, k): result for k, result in in_processes(build, wanted).items()})
    result = _built[(build, key)]
    if isinstance(result, Exception):
        raise result
    return result


# half_mma is the kernel of GPUs without wgmma, and half_gemv and half_gemv_one_row run on every
# GPU from sm_80 on: they must build for Ampere (sm_80, sm_86) and Ada (sm_89)
# too, where MLX's NVRTC targets those, as well as for the H100 they can be
# tested on.
OLDER_ARCHS = ("80", "86", "89")
OLDER_ARCH_SPECS = (specs.half_mma_specs()[:2] + specs.half_gemv_specs()[:1]
                    + specs.half_gemv_one_row_specs()[:1])


def test_every_kernel_that_converts_on_load_is_compiled_for_every_element_type():
    converting = {s.stage for s in specs.specs("cuda") if s.converts_on_load}
    assert converting and {s.stage for s in ELEMENT_TYPE_SPECS} == converting
    for stage in converting:
        pairs = [s.operand_types for s in ELEMENT_TYPE_SPECS if s.stage == stage]
        for position in (0, 1):
            assert {p[position] for p in pairs} == set(specs.ELEMENT_TYPES), (stage, pairs)


@pytest.mark.parametrize("spec", ELEMENT_TYPE_SPECS, ids=type_id)
def test_nvrtc_compiles_every_element_type(spec, request):
    needs(find_libnvrtc() is not None, "libnvrtc (pip install nvidia-cuda-nvrtc)")
    log, _ = built(request, spec)
    check_resources(spec, log)
    a_type, b_type = (signatures._CUDA_TYPES[t] for t in spec.operand_types)
    source = full_source(spec)
    assert f"const {a_type}* a," in source and f"const {b_type}* b," in source
    assert f"using TA = {a_type};" in source and f"using TB = {b_type};" in source


@pytest.mark.parametrize("spec", CUDA_SPECS, ids=lambda s: f"{s.stage}-{s.block_m}x{s.block_n}")
def test_nvcc_compiles_for_sm90a(spec, request):
    needs(shutil.which("nvcc") is not None, "nvcc (CUDA 13)")
    check_resources(spec, built(request, (spec, "90a")))


@pytest.mark.parametrize("arch", OLDER_ARCHS)
@pytest.mark.parametrize("spec", OLDER_ARCH_SPECS, ids=lambda s: f"{s.stage}-{s.block_m}x{s.block_n}")
def test_nvcc_compiles_half_mma_for_ampere_and_ada(spec, arch, request):
    needs(shutil.which("nvcc") is not None, "nvcc (CUDA 13)")
    check_resources(spec, built(request, (spec, arch)))


def test_nvrtc_rejects_what_mlx_would_reject():
    """The check has teeth: a standard-library include fails as on the GPU."""
    needs(find_libnvrtc() is not None, "libnvrtc")
    spec = specs.spec("naive", "cuda")
    with pytest.raises(AssertionError, match="cstdint"):
        nvrtc_compile("#include <cstdint>\n" + full_source(spec))


def test_generated_signature_is_mlx_shaped():
    spec = specs.spec("tile_16", "cuda")
    p = plan((5, 7), (7, 3))
    src = signatures.cuda_source(
        spec, signatures.operand_infos(spec, p.a_shape, p.b_shape, len(p.params(16, 16)))
    )
    # MLX's template hash: _16, then each dtype argument's get_type_string.
    assert f"__global__ void custom_kernel_{spec.name}_16_float_float(" in src
    assert spec.name.startswith("sgemm_tile_16_")  # + the digest of the files it includes
    assert f'#include "{sources.path("cuda", "tile.cu")}"' in src
    assert "const float* a,\n    const __grid_constant__ Shape a_shape," in src
    assert "const int32_t* params,\n    float* c) {" in src
    assert "constexpr int TILE = 16;\n  using TA = float;\n  using TB = float;\n" in src
    # Another element type is another kernel name: MLX keeps CUDA modules by name.
    half = spec.reading("bfloat16", "float16")
    src = signatures.cuda_source(
        half, signatures.operand_infos(half, p.a_shape, p.b_shape, len(p.params(16, 16))))
    assert f"__global__ void custom_kernel_{spec.name}_16_bfloat16_t_float16_t(" in src
    assert "const __nv_bfloat16* a," in src and "const __half* b," in src
    assert "using TA = __nv_bfloat16;\n  using TB = __half;\n" in src


@pytest.mark.parametrize("spec", CUDA_SPECS, ids=lambda s: f"{s.stage}-{s.block_m}x{s.block_n}")
def test_included_body_gets_the_parameters_its_text_reads(spec):
    """MLX adds a_shape / a_strides / ... to the signature when the source it
    is handed names them; the body comes as an include, so the source must
    still name what the file reads, no more."""
    body = spec.source()
    for name, infos in zip(spec.input_names, signatures.shape_infos(spec)):
        assert infos == tuple(f"{name}_{what}" in body for what in ("shape", "strides", "ndim"))
    assert len(spec.compiled_source()) < 300  # the per-call cost this is for


def test_kernel_name_follows_the_included_files(monkeypatch):
    """An edited kernel file gives a new name, so MLX's on-disk cache of
    compiled kernels (keyed by name and source) cannot serve the old build."""
    spec = specs.spec("tile_16", "cuda")
    before = spec.name
    monkeypatch.setattr(sources, "read", lambda backend, f: "// edited\n" + sources.path(backend, f).read_text())
    sources.digest.cache_clear()
    try:
        assert spec.name != before and spec.name.startswith("sgemm_tile_16_")
    finally:
        sources.digest.cache_clear()


def test_a_path_no_include_can_spell_is_inlined(monkeypatch, tmp_path):
    odd = tmp_path / 'a"b' / "cuda"
    odd.mkdir(parents=True)
    (odd / "x.cu").write_text("int x; // a comment\n")
    monkeypatch.setattr(sources, "kernels_dir", lambda: odd.parent)
    sources.read.cache_clear()
    try:
        assert sources.include("cuda", "x.cu") == "int x;\n"
    finally:
        sources.read.cache_clear()


# The kernels whose every shared-memory access must be compiled as one (ld.shared,
# st.shared): their pointers into shared memory are derived from the __shared__
# array, never rounded through an integer. A generic access (PTX ld/st with no
# state space, SASS LD.E) reaches shared memory too, more slowly: tile_wgmma's B
# fragments, read that way, cost 5% at float32 (H200; docs/performance-log.md,
# "tile_wgmma reads shared memory as shared memory").
SHARED_AS_SHARED = ("tile_wgmma", "matmul_tf32_wgmma", "small_m", "small_m_wide")
GENERIC_ACCESS = re.compile(
    r"^\s*(?:@!?%p\d+\s+)?((?:ld|st)(?:\.(?!shared|global|param|local|const)\w+)*)\s", re.M)


def check_no_generic_accesses(ptx: str):
    assert ".entry" in ptx, "no PTX came back"
    assert not GENERIC_ACCESS.findall(ptx), GENERIC_ACCESS.findall(ptx)[:5]


@pytest.mark.parametrize("spec", [s for s in CUDA_SPECS if s.stage in SHARED_AS_SHARED],
                         ids=lambda s: f"{s.stage}-{s.block_m}x{s.block_n}")
def test_no_generic_memory_accesses(spec, request):
    needs(find_libnvrtc() is not None, "libnvrtc (pip install nvidia-cuda-nvrtc)")
    check_no_generic_accesses(built(request, spec)[1])


@pytest.mark.parametrize("spec", [s for s in ELEMENT_TYPE_SPECS if s.stage in SHARED_AS_SHARED], ids=type_id)
def test_no_generic_memory_accesses_for_any_element_type(spec, request):
    needs(find_libnvrtc() is not None, "libnvrtc (pip install nvidia-cuda-nvrtc)")
    check_no_generic_accesses(built(request, spec)[1])


def test_host_and_device_count_the_emulations_blocks_alike():
    """int8_line_stats.cu and half_split.cu run both operands in one grid, the
    first operand's blocks first: the grid the host launches and the split
    point the kernel computes must agree, or the second operand's blocks
    would start at the wrong line. Checked at compile time, by NVRTC, for
    the host's counts (gpu._line_stats_blocks, half_split.split_blocks)."""
    needs(find_libnvrtc() is not None, "NVRTC")
    cases = [(lines, per_tile, k_tiles) for lines in (1, 7, 8, 9, 130, 2048, 4097)
             for per_tile in (128, 192, 256) for k_tiles in (1, 2, 65, 128)]
    asserts = [f"static_assert(sgemm::line_stats_blocks({lines}) == {gpu._line_stats_blocks(lines)}, \"stats\");"
               for lines, _, _ in cases]
    for lines, per_tile, k_tiles in cases:
        tiles = -(-lines // per_tile)
        asserts.append(f"static_assert(sgemm::split_blocks({per_tile}, {tiles}, {k_tiles}) == "
                       f"{half_split.split_blocks(per_tile, tiles, k_tiles)}, \"split\");")
    headers = "".join(sources.include("cuda", f"sgemm/{h}") for h in ("block_line_stats.cuh", "half_split_block.cuh"))
    nvrtc_compile(f'#include "{MLX_UTILS}"\n' + headers + "\n".join(asserts) + "\n")
