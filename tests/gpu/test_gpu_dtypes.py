"""float16 and bfloat16 operands on every stage, against a float64 reference, on the GPU.

The operands are fresh random values in the half type (so float64 holds them
exactly); outputs are poisoned with NaN before the kernel runs. A half result
may be off by its own rounding of the float32 product (unit roundoff 2**-11 for
float16, 2**-8 for bfloat16; a subnormal result half its fixed spacing) plus
the float32 product's error; a float32 result (mixed operands) by a float32
product's error alone.

Where a kernel converts on load (KernelSpec.converts_on_load: the half operand
is handed to it as it is), the conversion is exact and the arithmetic is the
float32 kernel's, so the result must be bit for bit the float32 product of the
same values in the same layout, cast once to the result dtype: the tests say
so for every op, and for the small-M kernels on each of their paths (layouts,
slices, batches, split-K views, every variant). That no operand is cast before
such a kernel is checked on the calls the ops make (a spy on their casts), and
against what ``mlx_sgemm.explain`` says.
"""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher, specs
from mlx_sgemm.dispatch import kernel_choice
from mlx_sgemm.dispatch.problem import dtype_name

from ..conftest import GPU_BACKEND, requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]

F32, F16, BF16 = mx.float32, mx.float16, mx.bfloat16
UNIT_ROUNDOFF = {F16: 2.0**-11, BF16: 2.0**-8, F32: 0.0}
# Below its smallest normal a half result is rounded to a fixed spacing, not a
# relative one: at most half of its subnormal spacing off, which a product of
# small values (a 1x1x1 product of 0.03 and 0.001, say) reaches.
SUBNORMAL_ROUNDING = {F16: 2.0**-25, BF16: 2.0**-134, F32: 0.0}
# A float32 product's error, normwise (bench.accuracy's measure): float32 FMAs
# and 3xTF32 land near 1e-7 on these sizes; test_gpu_ops bounds them tighter.
FLOAT32_ERROR = 2.0**-18
# (operand dtypes) -> result dtype, as mx.matmul (mx.result_type): every pair.
PAIRS = {(F16, F16): F16, (BF16, BF16): BF16, (F16, F32): F32, (F32, F16): F32,
         (BF16, F32): F32, (F32, BF16): F32, (F16, BF16): F32, (BF16, F16): F32}
OPS = [*specs.STAGES, "matmul"]
# Odd sizes, tile-sized ones, and the few-row products matmul gives its
# small-M kernels: small_m (M <= 8), small_m_wide (M <= 4 against N >= 12288).
SHAPES = [(1, 1, 1), (7, 5, 3), (33, 65, 17), (127, 129, 131), (513, 257, 1025), (20, 300, 1000),
          (1, 1000, 1000), (8, 300, 1000), (3, 12300, 129), (4, 12288, 256)]
CUDA_SMALL_M = ("small_m", "small_m_wide")


def name(dtype):
    return str(dtype).rpartition(".")[2]


def pair_id(pair):
    return f"{name(pair[0])}@{name(pair[1])}"


def half_operands(shape_a, shape_b, dtype_a, dtype_b):
    a, b = accuracy.random_operands(shape_a, shape_b)
    return a.astype(dtype_a), b.astype(dtype_b)


def check(op, a, b):
    with mlx_sgemm.poisoned_outputs():
        c = op(a, b)
    expected = mx.matmul(a, b)
    assert c.shape == expected.shape and c.dtype == expected.dtype
    # numpy has no bfloat16: compare in float32, which holds every half value.
    reference = accuracy.Reference(a.astype(F32), b.astype(F32))
    err = reference.error(c.astype(F32))
    subnormal = SUBNORMAL_ROUNDING[c.dtype] * c.size**0.5 / reference.scale
    assert err <= UNIT_ROUNDOFF[c.dtype] + FLOAT32_ERROR + subnormal, f"error {err:.3e} for a {c.dtype} result"
    return c


def assert_same_bits(got, expected, what):
    assert got.dtype == expected.dtype and got.shape == expected.shape, what
    same = np.asarray(got.astype(F32) == expected.astype(F32)) | (np.isnan(np.asarray(got.astype(F32)))
                                                                   & np.isnan(np.asarray(expected.astype(F32))))
    assert same.all(), f"{what}: {int((~same).sum())} of {same.size} elements differ from the float32 path's"


@pytest.mark.parametrize("stage", OPS)
@pytest.mark.parametrize("dtypes", PAIRS, ids=pair_id)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_stage_in_half_precision(stage, dtypes, mnk):
    """Against float64, and bit for bit the float32 path on the same values."""
    m, n, k = mnk
    a, b = half_operands((m, k), (k, n), *dtypes)
    op = getattr(mlx_sgemm, stage)
    c = check(op, a, b)
    assert c.dtype == PAIRS[dtypes]
    if stage == "matmul" and multiplies_halves(a, b):
        return  # half_wgmma: its own order of float32 sums (test_gpu_half_wgmma checks it)
    with mlx_sgemm.poisoned_outputs():
        float32_path = op(a.astype(F32), b.astype(F32)).astype(PAIRS[dtypes])
    assert_same_bits(c, float32_path, f"{stage} {pair_id(dtypes)} {mnk}")


def matmul_launch(a, b):
    """The launch matmul runs for these operands."""
    return ops.route_plan(kernel_choice.chooser("float32"), GPU_BACKEND, a.shape, b.shape, True,
                          (dtype_name(a.dtype), dtype_name(b.dtype)))[-1]


def multiplies_halves(a, b) -> bool:
    """Whether matmul multiplies these operands on the matrix units in their half type."""
    return matmul_launch(a, b).spec.multiplies_halves


@pytest.mark.parametrize("stage", OPS)
@pytest.mark.parametrize(
    "shape_a, shape_b",
    [((3, 1, 33, 17), (2, 17, 65)), ((33,), (2, 33, 7)), ((4, 65, 33), (33,)), ((129,), (129,)),
     ((2, 3, 1000), (1000, 40))],
    ids=str,
)
def test_stage_broadcasts_in_half_precision(stage, shape_a, shape_b):
    for dtypes in ((F16, F16), (BF16, BF16), (BF16, F32), (F32, F16)):
        check(getattr(mlx_sgemm, stage), *half_operands(shape_a, shape_b, *dtypes))


@pytest.mark.parametrize("stage", ["matmul", "tile_async", "tile_threads", "naive"])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=name)
@pytest.mark.parametrize("x_shape, w_shape", [((2, 520, 1030), (515, 1030)), ((1, 4096), (4096, 4096)),
                                              ((3, 515), (13000, 515)), ((8, 1030), (1000, 1030))], ids=str)
def test_transposed_weight_in_half_precision(stage, dtype, x_shape, w_shape):
    """x @ W.T with W a half array, read in place (converted on load) or cast
    first, by stage; the few-row shapes are matmul's small_m and small_m_wide."""
    x, w = half_operands(x_shape, w_shape, dtype, dtype)
    check(getattr(mlx_sgemm, stage), x, w.T)


# ---- no cast before a kernel that converts on load ------------------------------------------

def casts_made(op, a, b, monkeypatch) -> list[tuple]:
    """The (dtype, to dtype) of every astype the op's Python makes for a call,
    traced afresh (its compiled calls forgotten first)."""
    made, real = [], ops._as_dtype

    def spy(x, dtype, stream):
        if x.dtype != dtype:
            made.append((x.dtype, dtype))
        return real(x, dtype, stream)

    monkeypatch.setattr(ops, "_as_dtype", spy)
    ops._compiled.cache_clear()
    ops._route.cache_clear()
    ops._calls.clear()
    mx.eval(op(a, b))
    return made


@pytest.mark.parametrize("stage", OPS)
@pytest.mark.parametrize("dtypes", [(BF16, BF16), (F32, F16), (F16, BF16)], ids=pair_id)
@pytest.mark.parametrize("mnk", [(1, 4096, 4096), (8, 4096, 4096), (3, 12288, 512), (300, 200, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_an_operand_is_cast_only_where_the_kernel_cannot_convert_on_load(stage, dtypes, mnk, monkeypatch):
    """The casts the ops make are what explain (for matmul) or the spec (for a
    stage) says: none of an operand for a kernel that converts on load."""
    m, n, k = mnk
    a, b = half_operands((m, k), (k, n), *dtypes)
    if stage == "matmul":
        plan = mlx_sgemm.explain(a, b)
        conversions = plan.conversions
    else:
        spec = specs.spec(stage, GPU_BACKEND)
        conversions = kernel_choice.operand_conversions(spec.reading(*map(dtype_name, dtypes)), *map(dtype_name, dtypes))
    cast = [d for d, x in zip(dtypes, "ab") if conversions[x] == kernel_choice.CAST]
    made = casts_made(getattr(mlx_sgemm, stage), a, b, monkeypatch)
    assert sorted(map(str, (f for f, t in made if t == F32))) == sorted(map(str, cast)), (conversions, made)
    # The result is rounded to a half dtype once: by the kernel (half_wgmma, half_gemv) or by one cast after it.
    rounded_by_kernel = stage == "matmul" and matmul_launch(a, b).spec.output_type != "float32"
    assert [t for f, t in made if t != F32] == ([PAIRS[dtypes]] if PAIRS[dtypes] != F32 and not rounded_by_kernel else [])
    if stage == "matmul" and m <= kernel_choice.SMALL_M:  # the point of it: the memory-bound products
        # a pair of one half type on the tensor cores as it is (half_gemv), others converted on load
        few_rows = ("half_gemv",) if dtypes[0] == dtypes[1] else (*CUDA_SMALL_M, "small_m")
        assert not cast and plan.kernel in few_rows


# ---- the small-M kernels on every path ------------------------------------------------------

def twins(shape_a, shape_b, dtypes, view_a=lambda x: x, view_b=lambda x: x):
    """Operands in ``dtypes`` and their float32 twins: the same values in the
    same layout (each a view of a base array of its type)."""
    a, b = half_operands(shape_a, shape_b, *dtypes)
    return (view_a(a), view_b(b)), (view_a(a.astype(F32)), view_b(b.astype(F32)))


def launch(spec, a, b):
    with mlx_sgemm.poisoned_outputs():
        return launcher.launch(spec.reading(dtype_name(a.dtype), dtype_name(b.dtype)), a, b)


SMALL_M_SPECS = {
    "small_m": specs.spec("small_m", "cuda"),
    "small_m_3_stages_16_warps": specs.cuda_small_m(WARPS=16, STAGES=3),
    "small_m_bn16": specs.cuda_small_m(BN=16, WARPS=8, STAGES=3),
    "small_m_wide": specs.spec("small_m_wide", "cuda"),
    "small_m_wide_one_chunk": specs.cuda_small_m_wide(WARPS=16, U=1),
}
# Row-major B (x @ W), B a transposed view (x @ W.T), unaligned slices (odd
# starts and row strides: no vector loads, element copies), A a transposed view.
VIEWS = {
    "b": (lambda a: a, lambda b: b, (9, 1000), (1000, 1030)),
    "b_view_T": (lambda a: a, lambda w: w.T, (9, 1000), (1030, 1000)),
    "slices": (lambda a: a[1:, 1:998], lambda b: b[1:998, 3:1003], (9, 1000), (1000, 1030)),
    "a_view_T": (lambda a: a.T, lambda b: b, (1000, 9), (1000, 1030)),
}


@pytest.mark.skipif(GPU_BACKEND != "cuda", reason="small_m and small_m_wide are CUDA kernels")
@pytest.mark.parametrize("name", list(SMALL_M_SPECS))
@pytest.mark.parametrize("dtypes", [(BF16, BF16), (F16, F16), (F32, BF16), (BF16, F32), (F16, BF16)], ids=pair_id)
@pytest.mark.parametrize("view", list(VIEWS))
def test_small_m_kernels_convert_on_load_on_every_path(name, dtypes, view):
    view_a, view_b, shape_a, shape_b = VIEWS[view]
    (a, b), (a32, b32) = twins(shape_a, shape_b, dtypes, view_a, view_b)
    spec = SMALL_M_SPECS[name]
    c = launch(spec, a, b)
    assert c.dtype == F32
    assert accuracy.relative_error(c, a32, b32) <= FLOAT32_ERROR
    assert_same_bits(c, launch(spec, a32, b32), f"{name} {pair_id(dtypes)} {view}")


@pytest.mark.skipif(GPU_BACKEND != "cuda", reason="small_m and small_m_wide are CUDA kernels")
@pytest.mark.parametrize("name", list(SMALL_M_SPECS))
@pytest.mark.parametrize("dtypes", [(BF16, BF16), (F32, F16)], ids=pair_id)
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (3, 1, 4097), (5, 33, 1), (8, 4100, 129), (2, 4096, 257)],
                         ids=lambda v: str(v))
def test_small_m_kernels_in_half_precision_at_odd_shapes(name, dtypes, m, n, k):
    (a, b), (a32, b32) = twins((m, k), (k, n), dtypes)
    c = launch(SMALL_M_SPECS[name], a, b)
    assert accuracy.relative_error(c, a32, b32) <= FLOAT32_ERROR
    assert_same_bits(c, launch(SMALL_M_SPECS[name], a32, b32), f"{name} {pair_id(dtypes)} {(m, n, k)}")


@pytest.mark.skipif(GPU_BACKEND != "cuda", reason="small_m and small_m_wide are CUDA kernels")
@pytest.mark.parametrize("name", list(SMALL_M_SPECS))
def test_small_m_kernels_in_half_precision_on_batches_and_split_k_views(name):
    """Broadcast batches, and A (4, 1024) seen as (8, 4, 128) with B (1024, 1000)
    as (8, 128, 1000) through views: every partial product exact."""
    (a, b), (a32, b32) = twins((3, 1, 4, 129), (2, 129, 65), (BF16, F16))
    assert_same_bits(launch(SMALL_M_SPECS[name], a, b), launch(SMALL_M_SPECS[name], a32, b32), name)
    (a, b), (a32, b32) = twins((4, 1024), (1024, 1000), (BF16, BF16))
    split = [(mx.as_strided(x, (8, 4, 128), (128, 1024, 1)), y.reshape(8, 128, 1000)) for x, y in ((a, b), (a32, b32))]
    parts = launch(SMALL_M_SPECS[name], *split[0])
    assert parts.shape == (8, 4, 1000)
    assert_same_bits(parts, launch(SMALL_M_SPECS[name], *split[1]), f"{name} split-K views")
    assert accuracy.relative_error(mx.sum(parts, axis=0), a32, b32) <= FLOAT32_ERROR


# ---- gradients and layers -------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["matmul", "tile_simdgroup", "tile_threads"])
@pytest.mark.parametrize("dtypes", [(F16, F16), (BF16, BF16), (BF16, F32)], ids=str)
@pytest.mark.parametrize("shapes", [((33, 65), (65, 17)), ((3, 1000), (1000, 300))], ids=str)
def test_gradients_in_half_precision(stage, dtypes, shapes):
    a, b = half_operands(*shapes, *dtypes)
    w = mx.random.normal((shapes[0][0], shapes[1][1]))
    op = getattr(mlx_sgemm, stage)
    da, db = mx.grad(lambda a, b: mx.sum(op(a, b).astype(F32) * w), argnums=(0, 1))(a, b)
    assert da.dtype == a.dtype and db.dtype == b.dtype
    a64, b64 = (np.asarray(x.astype(F32), np.float64) for x in (a, b))
    w64 = np.asarray(w, np.float64)
    for g, ref, rows, cols in ((da, w64 @ b64.T, w64, b64.T), (db, a64.T @ w64, a64.T, w64)):
        g64 = np.asarray(g.astype(F32), np.float64)
        scale = np.linalg.norm(np.abs(rows) @ np.abs(cols))
        # The cotangent passes through the result dtype once, the product once more.
        bound = 2 * max(UNIT_ROUNDOFF[x.dtype] for x in (a, b)) + FLOAT32_ERROR
        assert np.linalg.norm(g64 - ref) <= bound * scale


@pytest.mark.parametrize("dtype", [F16, BF16], ids=name)
@pytest.mark.parametrize("rows", [(3, 5), (1,)], ids=str)
def test_layer_in_half_precision(dtype, rows):
    layer = mlx_sgemm.nn.Linear(96, 40)
    layer.set_dtype(dtype)
    x = mx.random.normal((*rows, 96)).astype(dtype)
    with mlx_sgemm.poisoned_outputs():
        y = layer(x)
    assert y.dtype == dtype
    ref = x.astype(F32) @ layer.weight.astype(F32).T + layer.bias.astype(F32)
    scale = np.abs(np.asarray(x.astype(F32))) @ np.abs(np.asarray(layer.weight.astype(F32))).T
    diff = np.abs(np.asarray(y.astype(F32)) - np.asarray(ref))
    # The product's rounding to the half type, and the bias add's.
    assert np.all(diff <= 2 * UNIT_ROUNDOFF[dtype] * (scale + np.abs(np.asarray(ref))) + 1e-6)
