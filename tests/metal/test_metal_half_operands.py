"""Metal kernels with float16 and bfloat16 operands, in the CPU harness.

The kernels that convert on load (KernelSpec.converts_on_load) are compiled as
MLX compiles them for half inputs: the same body, in a signature that declares
``const device float16_t* a`` / ``bfloat16_t*`` (signatures.metal_source on the
spec's instance for those element types), the Metal checker's compatibility
header standing for what MLX's Metal prelude defines. Each operand is bound in its own element type, at
its own strides, as MLX binds a half array; the output starts as NaN (the
harness poisons every output). The result is compared with float64 of the
operands' half values, which float64 holds exactly: what is left is the
kernel's float32 accumulation, ~1e-7 normwise (checks.TOLERANCE is 1e-6),
where reading a half operand as anything but its value, or rounding a float32
operand to a half one, is off by 1e-3 or more.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.bench.accuracy import relative_error
from mlx_sgemm.build import signatures, specs
from mlx_sgemm.dispatch.problem import plan

from mlx_sgemm.metal_check import binding

from .harness import checks, gemm

CONVERTING = [s for s in specs.specs("metal") if s.converts_on_load]
# (a's, b's element type): each half type alone, both mixed with float32 and
# with each other.
PAIRS = [("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "bfloat16"),
         ("float16", "float32"), ("bfloat16", "float16")]
# Multiples of no block: M, K, N = 33, 17, 65.
A_SHAPE, B_SHAPE = (33, 17), (17, 65)


def pair_id(pair):
    return "@".join(pair)


# ---- operands in an element type --------------------------------------------------------

def in_element_type(x: np.ndarray, element_type: str) -> np.ndarray:
    """float32 ``x`` rounded to ``element_type`` (to nearest even), as NumPy
    holds it: float16, or bfloat16's bits as int16 (NumPy has no bfloat16; the
    kernel reads the bytes, and int16's -1, which the harness puts between a
    slice's rows, is a bfloat16 NaN)."""
    if element_type == "float32":
        return x
    if element_type == "float16":
        return x.astype(np.float16)
    return np.array(mx.array(x).astype(mx.bfloat16).view(mx.int16), copy=True)


def values(x: np.ndarray) -> np.ndarray:
    """The float64 values of an operand made by element_view."""
    if x.dtype == np.int16:  # bfloat16: the upper half of the float32 of the same value
        return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def element_type(x: np.ndarray) -> str:
    return {np.dtype(np.int16): "bfloat16"}.get(x.dtype, str(x.dtype))


def element_view(view: np.ndarray, element_type_: str) -> np.ndarray:
    """``view`` (a float32 view of a contiguous array, any strides, as
    checks.layout makes them) rounded to ``element_type_``: the same view of
    that array rounded, so the kernel meets the same strides."""
    base = view
    while base.base is not None:
        base = base.base
    assert base.flags.c_contiguous and base.dtype == np.float32
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4
    rounded = in_element_type(base.reshape(-1), element_type_)
    strides = [s // 4 * rounded.itemsize for s in view.strides]
    return np.lib.stride_tricks.as_strided(rounded[offset:], view.shape, strides)


def operands(pair, a_shape=A_SHAPE, b_shape=B_SHAPE, layouts=("row", "row"), seed=0):
    rng = np.random.default_rng(seed)
    return tuple(element_view(checks.layout(shape, kind, rng), t)
                 for shape, kind, t in zip((a_shape, b_shape), layouts, pair))


# ---- the launch --------------------------------------------------------------------------

def harness_matmul(spec, a, b, *, k_splits=1, **dispatch) -> np.ndarray:
    """``a @ b`` with ``spec``'s instance for a's and b's element types, each
    bound at its strides in its own type, as MLX binds a half array (the
    buffers in CustomKernel::eval_gpu's order, as gemm.matmul binds them); float32."""
    kernel = spec.reading(element_type(a), element_type(b))
    p = plan(a.shape, b.shape)
    inputs = [a.reshape(p.a_shape), b.reshape(p.b_shape),
              np.asarray(p.params(kernel.block_m, kernel.block_n, k_splits), np.int32)]
    prog = gemm.program(kernel, signatures.operand_infos(kernel, p.a_shape, p.b_shape, inputs[2].size))
    out_shape = p.kernel_out_shape(k_splits)
    buffers = binding.bind(kernel.input_names, inputs, signatures.shape_infos(kernel), kernel.output_names,
                           [(out_shape, np.float32)], row_contiguous=kernel.ensure_row_contiguous)
    grid = p.grid(kernel.block_m, kernel.block_n, kernel.threadgroup, k_splits)
    (out,) = gemm.dispatch(prog, buffers, grid, kernel.threadgroup, **dispatch)
    partial_products = np.frombuffer(out, dtype=np.float32).reshape(out_shape)
    return (partial_products.sum(axis=0) if k_splits > 1 else partial_products).reshape(p.out_shape)


def check(spec, a, b, **kwargs) -> float:
    out = harness_matmul(spec, a, b, **kwargs)
    err = relative_error(out, values(a), values(b))
    assert err < checks.TOLERANCE, (
        f"{spec.stage} {element_type(a)} {a.shape} (strides {a.strides}) @ {element_type(b)} {b.shape} "
        f"(strides {b.strides}): relative error {err:.3g}")
    return err


# ---- the kernels ----------------------------------------------------------------------------

def test_the_kernels_that_convert_on_load():
    """Every Metal kernel that reads operands only through sgemm::Operand;
    tile_async and gemm copy bytes into float tiles (their operands are cast)."""
    assert {s.stage for s in CONVERTING} == {"naive", "tile_16", "tile_32", "tile_threads", "tile_simdgroup", "small_m"}


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@pytest.mark.parametrize("spec", CONVERTING, ids=lambda s: s.stage)
def test_half_operands_match_float64_of_their_values(spec, pair):
    check(spec, *operands(pair))


@pytest.mark.parametrize("a_shape,b_shape", [((1, 1), (1, 1)), ((1, 5), (5, 3)), ((2, 1, 19, 37), (3, 37, 21))],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("spec", CONVERTING, ids=lambda s: s.stage)
def test_half_operands_in_constant_memory_and_batched(spec, a_shape, b_shape):
    """1x1 and 1x5 operands arrive in the constant address space (a `const
    constant bfloat16_t*` operand); batch dims broadcast."""
    check(spec, *operands(("bfloat16", "float16"), a_shape, b_shape))


@pytest.mark.parametrize("layouts", [("col", "row"), ("neg", "strided"), ("slice", "col"), ("bcast_rows", "scalar")],
                         ids="-".join)
@pytest.mark.parametrize("spec", CONVERTING, ids=lambda s: s.stage)
def test_half_operands_in_any_layout(spec, layouts):
    """Transposed views, slices (NaN between the rows), negative and zero strides:
    read in place, in the half type's element size."""
    check(spec, *operands(("bfloat16", "bfloat16"), layouts=layouts))


@pytest.mark.parametrize("spec", CONVERTING, ids=lambda s: s.stage)
def test_half_operands_split_k_against_guard_pages_before_the_buffers(spec):
    a, b = operands(("float16", "bfloat16"), (2, 1, 19, 131), (3, 131, 21))
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
    out = harness_matmul(planted, a, b)
    assert relative_error(out, values(a), values(b)) > 1e-4
