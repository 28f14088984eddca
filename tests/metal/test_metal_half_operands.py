"""Metal kernels with float16 and bfloat16 operands, in the CPU harness.

Every Metal kernel takes them: those that convert on load
(KernelSpec.converts_on_load) read each element as float32; those with
half_tiles keep a pair of one half type in tiles of that type, multiplied on
half simdgroup matrices into float32 accumulators (tile_async and gemm cast a
mixed pair to float32 first, and the harness does as the package does). Each
instance is compiled as MLX compiles it for half inputs: the same body, in a
signature that declares ``const device float16_t* a`` / ``bfloat16_t*``
(signatures.metal_source on the spec's instance for those element types), the
Metal checker's compatibility header standing for what MLX's Metal prelude
defines. Each operand is bound in its own element type, at its own strides, as
MLX binds a half array; the output starts as NaN (the harness poisons every
output). The result is compared with float64 of the operands' half values,
which float64 holds exactly: what is left is the kernel's float32
accumulation, ~1e-7 normwise (checks.TOLERANCE is 1e-6), where reading a half
operand as anything but its value, or rounding a float32 operand to a half
one, is off by 1e-3 or more. A product of two halves is exact in float32, so
half tiles meet the same bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlx_sgemm.bench.accuracy import relative_error
from mlx_sgemm.build import signatures, specs

from .harness import checks, gemm
from .harness.elements import element_view, values

METAL_SPECS = specs.specs("metal")
CONVERTING = [s for s in METAL_SPECS if s.converts_on_load]
HALF_TILES = [s for s in METAL_SPECS if s.half_tiles]
# (a's, b's element type): each half type alone, both mixed with float32 and
# with each other.
PAIRS = [("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "bfloat16"),
         ("float16", "float32"), ("bfloat16", "float16")]
# Multiples of no block: M, K, N = 33, 17, 65.
A_SHAPE, B_SHAPE = (33, 17), (17, 65)


def pair_id(pair):
    return "@".join(pair)


def operands(pair, a_shape=A_SHAPE, b_shape=B_SHAPE, layouts=("row", "row"), seed=0):
    """a and b in the pair's element types (harness.elements), in the layouts
    of checks.LAYOUTS."""
    rng = np.random.default_rng(seed)
    return tuple(element_view(checks.layout(shape, kind, rng), t)
                 for shape, kind, t in zip((a_shape, b_shape), layouts, pair))


def check(spec, a, b, **kwargs) -> float:
    """``spec``'s instance for a's and b's element types, run in the harness
    (gemm.matmul binds each operand in its own type, at its strides); its
    error from float64 of the operands' values, asserted within checks.TOLERANCE."""
    out = checks.check(spec, a, b, **kwargs)
    return relative_error(out, values(a), values(b))


# ---- the kernels ----------------------------------------------------------------------------

def test_the_kernels_that_convert_on_load():
    """Every Metal kernel that reads operands only through sgemm::Operand;
    tile_async and gemm copy bytes: a mixed pair is cast to float32 first, one
    half type kept in half tiles (test_metal_half_tiles.py)."""
    assert {s.stage for s in CONVERTING} == {"naive", "tile_16", "tile_32", "tile_threads", "tile_simdgroup", "small_m"}


def test_the_kernels_with_half_tiles():
    """The simdgroup-matrix kernels; for a pair of one half type each has an
    instance of its own, for a mixed pair tile_async and gemm their float32 one."""
    assert {s.stage for s in HALF_TILES} == {"tile_simdgroup", "small_m", "tile_async", "gemm"}
    for spec in HALF_TILES:
        for t in ("float16", "bfloat16"):
            assert spec.reading(t, t).operand_types == (t, t)
        mixed = spec.reading("bfloat16", "float16")
        assert mixed.operand_types == (("bfloat16", "float16") if spec.converts_on_load else specs.FLOAT32_OPERANDS)


# The type sgemm::TileElement gives the tiles, in Metal's names: the pair's
# own half type, else float.
TILE_TYPES = {("float16", "float16"): "half", ("bfloat16", "bfloat16"): "bfloat",
              ("float32", "float32"): "float", ("float16", "float32"): "float",
              ("bfloat16", "float16"): "float"}
TILE_DECLARATION = "using T = sgemm::TileElement<decltype(a), decltype(b)>;"


def with_tile_type_asserted(spec, metal_type: str):
    """``spec`` with a compile-time check that its tiles are of ``metal_type``."""
    return checks.variant(spec, body=checks.replace_once(
        spec.source(), TILE_DECLARATION,
        f"{TILE_DECLARATION} static_assert(__is_same(T, {metal_type}), \"tile type\");"))


@pytest.mark.parametrize("pair", TILE_TYPES, ids=pair_id)
@pytest.mark.parametrize("spec", HALF_TILES, ids=lambda s: s.stage)
def test_half_tiles_hold_a_pair_of_one_half_type_as_it_is(spec, pair):
    """The tiles' element type as compiled (after the package's casts: tile_async
    and gemm get a mixed pair as float32); asserting another type fails to
    compile, so the assertion is checked."""
    a, b = operands(pair)
    check(with_tile_type_asserted(spec, TILE_TYPES[pair]), a, b)
    wrong = "float" if TILE_TYPES[pair] != "float" else "half"
    with pytest.raises(gemm.CompileError):
        gemm.matmul(with_tile_type_asserted(spec, wrong), a, b)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_half_operands_match_float64_of_their_values(spec, pair):
    check(spec, *operands(pair))


@pytest.mark.parametrize("pair", [("bfloat16", "float16"), ("float16", "float16")], ids=pair_id)
@pytest.mark.parametrize("a_shape,b_shape", [((1, 1), (1, 1)), ((1, 5), (5, 3)), ((2, 1, 19, 37), (3, 37, 21))],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_half_operands_in_constant_memory_and_batched(spec, a_shape, b_shape, pair):
    """1x1 and 1x5 operands arrive in the constant address space (a `const
    constant bfloat16_t*` operand); batch dims broadcast."""
    check(spec, *operands(pair, a_shape, b_shape))


@pytest.mark.parametrize("pair", [("bfloat16", "bfloat16"), ("float16", "float16")], ids=pair_id)
@pytest.mark.parametrize("layouts", [("col", "row"), ("neg", "strided"), ("slice", "col"), ("bcast_rows", "scalar")],
                         ids="-".join)
@pytest.mark.parametrize("spec", METAL_SPECS, ids=lambda s: s.stage)
def test_half_operands_in_any_layout(spec, layouts, pair):
    """Transposed views, slices (NaN between the rows), negative and zero strides:
    read in place, in the half type's element size."""
    check(spec, *operands(pair, layouts=layouts))


@pytest.mark.parametrize("pair", [("float16", "bfloat16"), ("bfloat16", "bfloat16")], ids=pair_id)
@pytest.mark.parametrize("spec", [s for s in METAL_SPECS if "c_in" not in s.input_names], ids=lambda s: s.stage)
def test_half_operands_split_k_against_guard_pages_before_the_buffers(spec, pair):
    a, b = operands(pair, (2, 1, 19, 131), (3, 131, 21))
    check(spec, a, b, k_splits=3, align_end=False, seed=5)


def test_the_signature_declares_the_half_types():
    kernel = specs.spec("small_m", "metal").reading("bfloat16", "float16")
    infos = signatures.operand_infos(kernel, (33, 17), (17, 65), 8)
    source = signatures.metal_source(kernel, infos)
    assert "const device bfloat16_t* a [[buffer(0)]]" in source
    assert "const device float16_t* b [[buffer(" in source
    assert signatures.metal_kernel_name(kernel, infos).endswith("_bfloat16_t_float16_t_int32_t_float")


def test_rounding_a_float32_operand_to_bfloat16_is_caught():
    """The check has teeth: a kernel that rounds what it reads to bfloat16
    (right for a bfloat16 operand, wrong for its float32 partner) fails."""
    spec = specs.spec("tile_16", "metal")
    planted = checks.variant(spec, header=checks.replace_once(
        spec.header(), "return p[r * rs + c * cs];", "return static_cast<bfloat>(p[r * rs + c * cs]);"))
    a, b = operands(("float32", "bfloat16"))
    assert check(spec, a, b) < checks.TOLERANCE
    out = gemm.matmul(planted, a, b)
    assert relative_error(out, values(a), values(b)) > 1e-4
