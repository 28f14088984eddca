"""float16 and bfloat16 operands, without a GPU: every op on the CPU fallback
(mx.matmul), and on faked CUDA and Metal devices (conftest's fake_cuda and
fake_metal, whose kernels take operands of their spec's element types and
return the float32 product) which operands reach a kernel as they are and
which are cast first; explain's account of it; layers through replace_linear."""

import logging

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx.utils import tree_flatten

import mlx_sgemm
from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import OPERAND_DTYPES

from .conftest import GPU_BACKEND
from .test_autodiff import MLP

OPS = {"matmul": mlx_sgemm.matmul, **mlx_sgemm.ops.STAGE_OPS}
F32, F16, BF16 = mx.float32, mx.float16, mx.bfloat16
# Every pair of operand dtypes, and the dtype mx.matmul gives it (MLX 0.32).
PAIRS = {(F16, F16): F16, (BF16, BF16): BF16, (F16, F32): F32, (F32, F16): F32,
         (BF16, F32): F32, (F32, BF16): F32, (F16, BF16): F32, (BF16, F16): F32}
SHAPES = [((7, 5), (5, 3)), ((3, 1, 9, 13), (2, 13, 6)), ((13,), (2, 13, 6)), ((9, 13), (13,))]


def name(dtype):
    return str(dtype).rpartition(".")[2]


def operands(shape_a, shape_b, dtype_a, dtype_b):
    rng = np.random.default_rng(0)
    return (mx.array(rng.standard_normal(shape_a).astype(np.float32)).astype(dtype_a),
            mx.array(rng.standard_normal(shape_b).astype(np.float32)).astype(dtype_b))


def as_f64(x):
    return np.asarray(x.astype(F32), dtype=np.float64)  # numpy has no bfloat16


def test_result_dtypes_are_mx_matmuls():
    """The table above is what this MLX does (the ops follow mx.result_type)."""
    for (da, db), expected in PAIRS.items():
        a, b = operands((2, 3), (3, 4), da, db)
        assert mx.matmul(a, b, stream=mx.cpu).dtype == expected == mx.result_type(a, b)


@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{name(p[0])}@{name(p[1])}")
def test_cpu_fallback_is_mx_matmul_in_every_dtype(op_name, dtypes):
    for shape_a, shape_b in SHAPES:
        a, b = operands(shape_a, shape_b, *dtypes)
        got = OPS[op_name](a, b, stream=mx.cpu)
        expected = mx.matmul(a, b, stream=mx.cpu)
        assert got.dtype == expected.dtype == PAIRS[dtypes]
        assert mx.array_equal(got, expected).item()


@pytest.mark.parametrize("op_name", ["matmul", "tile_async"])
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{name(p[0])}@{name(p[1])}")
def test_gradients_come_back_in_the_operands_dtypes(op_name, dtypes):
    for shape_a, shape_b in SHAPES:
        a, b = operands(shape_a, shape_b, *dtypes)
        w = mx.random.normal(mx.matmul(a, b).shape)

        def loss(op):
            return lambda a, b: mx.sum(op(a, b).astype(F32) * w)

        ours = mx.grad(loss(OPS[op_name]), argnums=(0, 1))(a, b)
        ref = mx.grad(loss(mx.matmul), argnums=(0, 1))(a, b)
        for g, r, x in zip(ours, ref, (a, b)):
            assert g.dtype == x.dtype and g.shape == x.shape
            assert np.allclose(as_f64(g), as_f64(r), rtol=2e-2, atol=2e-2)


# ---- the GPU path, on faked devices -----------------------------------------

# The kernels that read half operands themselves, converting on load: every
# stage but those whose copies move bytes into tiles the matrix units read as
# float32 (the ops docstring says which and why).
CONVERTS_ON_LOAD = {
    "cuda": {"naive", "tile_16", "tile_32", "tile_threads", "tile_simdgroup", "small_m", "small_m_wide"},
    "metal": {"naive", "tile_16", "tile_32", "tile_threads", "tile_simdgroup", "small_m"},
}


@pytest.mark.parametrize("backend", ["cuda", "metal"])
def test_which_kernels_convert_on_load(backend):
    assert {s.stage for s in specs.specs(backend) if s.converts_on_load} == CONVERTS_ON_LOAD[backend]
    for spec in specs.specs(backend):
        half = spec.reading("bfloat16", "float16")
        assert half.operand_types == (("bfloat16", "float16") if spec.converts_on_load else ("float32", "float32"))
        assert (half == spec) == (not spec.converts_on_load)  # an instance of its own, or the same kernel


# The Metal kernels that keep a pair of one half type in half tiles (half
# simdgroup matrices into float32 accumulators; the ops docstring).
HALF_TILES = {"tile_simdgroup", "small_m", "tile_async", "gemm"}


def test_which_metal_kernels_keep_half_tiles():
    assert {s.stage for s in specs.specs("metal") if s.half_tiles} == HALF_TILES
    assert not any(s.half_tiles for s in specs.specs("cuda"))
    for spec in specs.specs("metal"):
        for t in ("float16", "bfloat16"):
            same = spec.reading(t, t)
            assert same.reads_half_tiles(*same.operand_types) == (spec.stage in HALF_TILES)
            assert same.operand_types == ((t, t) if spec.converts_on_load or spec.half_tiles else specs.FLOAT32_OPERANDS)
        assert not spec.reading("float16", "float32").reads_half_tiles(*spec.reading("float16", "float32").operand_types)


def reads_as_they_are(spec, dtypes) -> bool:
    """Whether ``spec`` (an instance) is handed operands of these dtypes as they
    are: converted on load, in half tiles (Metal) or on half tensor cores (half_wgmma)."""
    return spec.converts_on_load or spec.multiplies_halves


@pytest.mark.parametrize("backend", ["cuda", "metal"])
@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{name(p[0])}@{name(p[1])}")
def test_half_operands_reach_the_kernels_that_convert_on_load_as_they_are(request, backend, op_name, dtypes):
    """A kernel that converts on load, or keeps a pair of one half type in half
    tiles (Metal), is handed each operand in its own dtype (no cast before
    it), the others float32 (one cast); either way the result is the float32
    product cast once to mx.matmul's dtype, bit for bit."""
    launches = request.getfixturevalue(f"fake_{backend}")
    for shape_a, shape_b in SHAPES:  # M of 7 and 1 (matmul: small_m), 9 (the large-product kernel)
        a, b = operands(shape_a, shape_b, *dtypes)
        got = OPS[op_name](a, b)
        expected = mx.matmul(a.astype(F32), b.astype(F32)).astype(PAIRS[dtypes])
        assert got.dtype == PAIRS[dtypes] and got.shape == expected.shape
        assert mx.array_equal(got, expected).item()
    assert launches
    for launch in launches:
        assert launch.dtypes == (dtypes if reads_as_they_are(launch.spec, dtypes) else (F32, F32)), launch.spec.stage
    if op_name == "matmul":  # small_m for the few rows; for the others a kernel that casts, but a pair
        # of one half type stays as it is (Metal: tile_async's half tiles; CUDA: half_wgmma)
        as_is = {reads_as_they_are(launch.spec, dtypes) for launch in launches}
        assert as_is == ({True} if dtypes[0] == dtypes[1] else {True, False})


@pytest.mark.parametrize("dtypes", [(F16, F16), (BF16, F32)], ids=str)
def test_no_cast_of_an_operand_where_the_kernel_converts(fake_cuda, monkeypatch, dtypes):
    """The ops make no astype of an operand for a kernel that converts on load
    or multiplies the halves as they are, nor of the product where the kernel
    rounds it (half_gemv on a pair of one half type, small_m on a mixed pair's
    few rows)."""
    from mlx_sgemm import ops

    casts = []
    real = ops._as_dtype

    def spy(x, dtype, stream):
        casts.append((x.dtype, dtype))
        return real(x, dtype, stream)

    monkeypatch.setattr(ops, "_as_dtype", spy)
    a, b = operands((4, 64), (64, 96), *dtypes)
    mlx_sgemm.matmul(a, b)
    assert fake_cuda[-1].spec.stage == ("half_gemv" if dtypes[0] == dtypes[1] else "small_m")
    # No cast at all: a float32 result as the kernel writes it, a half one
    # rounded by the kernel itself (its instance for the pair, rounding_to).
    assert [(x, t) for x, t in casts if x != t] == []
    assert fake_cuda[-1].spec.output_type == name(PAIRS[dtypes])
    casts.clear()
    mlx_sgemm.tile_async(a, b)  # casts its half operands
    assert {(x, t) for x, t in casts if x != t and t == F32} == {(d, F32) for d in dtypes if d != F32}


@pytest.mark.parametrize("dtypes", [(BF16, BF16), (F32, F16)], ids=str)
def test_explain_says_which_operands_are_converted_on_load_and_which_cast(dtypes):
    a, b = (mx.zeros(s, dtype=d) for s, d in zip(((1, 4096), (4096, 4096)), dtypes))
    small = mlx_sgemm.explain(a, b, backend="cuda")
    if dtypes[0] == dtypes[1]:  # a token's products on the tensor cores too (half_gemv)
        assert small.kernel == "half_gemv"
        assert small.conversions == dict.fromkeys("ab", kernel_choice.HALF_TENSOR_CORES)
    else:
        assert small.kernel == "small_m"
        assert small.conversions == {n: kernel_choice.AS_IS if d == F32 else kernel_choice.CONVERTED_ON_LOAD
                                     for n, d in zip("ab", dtypes)}
    cast = {n: kernel_choice.AS_IS if d == F32 else kernel_choice.CAST for n, d in zip("ab", dtypes)}
    large = mlx_sgemm.explain((1024, 4096), (4096, 2048), backend="cuda", dtype=tuple(map(name, dtypes)))
    # With every side 2048 or more the float16 split, which splits float32 operands.
    split = mlx_sgemm.explain((4096, 4096), (4096, 4096), backend="cuda", dtype=tuple(map(name, dtypes)))
    if dtypes[0] == dtypes[1]:  # one half type: on the tensor cores as it is, whatever the size
        for e in (large, split):
            assert e.kernel == "half_wgmma"
            assert e.conversions == dict.fromkeys("ab", kernel_choice.HALF_TENSOR_CORES)
            assert "rounded once to" in e.contract and "both operands" in e.chosen_by
        text = str(small) + str(large)
        assert f"{name(dtypes[0])}: read as it is into shared memory by the TMA" in text
        assert f"{name(dtypes[0])}: read as it is straight into the tensor cores' registers" in text
        # A persistent kernel: a block an SM or so, walking the tiles.
        assert split.parameters["tiles"] == 512 and split.parameters["blocks"] == 132
        assert f"rounded once to {name(dtypes[0])}" in small.contract
    else:  # a mixed pair: the float32 kernels, the half operand cast first
        assert large.kernel == "tile_wgmma" and split.kernel == "fp16_emulated"
        assert large.conversions == split.conversions == cast
        text = str(small) + str(large)
        for d in {name(d) for d in dtypes if d != F32}:
            assert f"{d}: converted to float32 on load" in text and f"{d}: cast to float32" in text
    assert small.recorded is None  # the recorded runs are float32's


@pytest.mark.parametrize("dtypes", [(BF16, BF16), (F16, F16), (F16, F32), (BF16, F16)], ids=str)
def test_explain_says_which_metal_operands_stay_in_half_tiles(dtypes):
    """Metal: a pair of one half type in half tiles (no cast first) for small_m
    and tile_async; a mixed pair converted on load (small_m) or cast (tile_async)."""
    same = dtypes[0] == dtypes[1]
    for shape, kernel, mixed in (((4, 4096), "small_m", kernel_choice.CONVERTED_ON_LOAD),
                                 ((1024, 4096), "tile_async", kernel_choice.CAST)):
        e = mlx_sgemm.explain(shape, (4096, 2048), backend="metal", dtype=tuple(map(name, dtypes)))
        assert e.kernel == kernel
        assert e.conversions == {n: kernel_choice.AS_IS if d == F32 else kernel_choice.HALF_TILES if same else mixed
                                 for n, d in zip("ab", dtypes)}
        if same:
            assert f"dtype a      {name(dtypes[0])}: read as it is into half tiles" in str(e)
            assert "half simdgroup matrices" in e.contract


@pytest.mark.parametrize("dtypes", [(BF16, BF16), (F16, F16), (F16, BF16), (F32, F16)], ids=str)
def test_metal_gemm_keeps_a_pair_of_one_half_type(fake_metal, dtypes):
    """The fused gemm is handed a pair of one half type as it is (half tiles),
    another pair as float32; c_in float32 either way."""
    a, b = operands((9, 13), (13, 6), *dtypes)
    c = mx.ones((9, 6), dtype=dtypes[0])
    got = mlx_sgemm.gemm(a, b, c, alpha=2.0, beta=0.5)
    expected = 2.0 * mx.matmul(a.astype(F32), b.astype(F32)) + 0.5 * c.astype(F32)
    assert np.allclose(as_f64(got), np.asarray(expected, np.float64), rtol=1e-2, atol=1e-2)
    (launch,) = fake_metal
    assert launch.spec.stage == "gemm"
    assert launch.dtypes == (dtypes if dtypes[0] == dtypes[1] != F32 else (F32, F32))


def test_explain_dtype_errors():
    with pytest.raises(ValueError, match="dtype must be one of"):
        mlx_sgemm.explain((2, 3), (3, 4), backend="cuda", dtype="int8")
    with pytest.raises(ValueError, match="one dtype or a pair"):
        mlx_sgemm.explain((2, 3), (3, 4), backend="cuda", dtype=("float16",) * 3)
    with pytest.raises(TypeError, match="a must have dtype"):
        mlx_sgemm.explain(mx.zeros((2, 3), dtype=mx.int32), (3, 4), backend="cuda")
    # An array's own dtype wins over dtype=, which names those given as shapes.
    e = mlx_sgemm.explain(mx.zeros((2, 3), dtype=BF16), (3, 4), backend="cuda", dtype=mx.float16)
    assert e.dtypes == {"a": "bfloat16", "b": "float16"}


@pytest.mark.parametrize("dtypes", [(F16, F16), (BF16, F32), (F16, BF16)], ids=str)
def test_gradients_on_the_gpu_path(fake_cuda, dtypes):
    a, b = operands((6, 9), (9, 4), *dtypes)
    ops_grads = mx.grad(lambda a, b: mlx_sgemm.matmul(a, b).astype(F32).sum(), argnums=(0, 1))(a, b)
    ref = mx.grad(lambda a, b: mx.matmul(a, b).astype(F32).sum(), argnums=(0, 1))(a, b)
    for g, r, x in zip(ops_grads, ref, (a, b)):
        assert g.dtype == x.dtype
        assert np.allclose(as_f64(g), as_f64(r), rtol=2e-2, atol=2e-2)
    _, tangent = mx.jvp(mlx_sgemm.matmul, (a, b), (mx.ones_like(a), mx.ones_like(b)))
    assert tangent[0].dtype == PAIRS[dtypes]


def test_a_repeated_call_in_another_dtype_is_its_own_call(fake_cuda):
    """matmul remembers each call by its operands' dtypes too."""
    a, b = operands((5, 7), (7, 3), F32, F32)
    for dtype in (F32, F16, BF16, F32, F16):
        assert mlx_sgemm.matmul(a.astype(dtype), b.astype(dtype)).dtype == dtype


# ---- layers --------------------------------------------------------------------

def mlp(dtype):
    mx.random.seed(0)
    model = MLP()
    model.set_dtype(dtype)
    return model


@pytest.mark.parametrize("backend", ["cpu-fallback", "fake cuda"])
def test_bfloat16_mlp_forward_and_gradients(backend, request):
    launches = request.getfixturevalue("fake_cuda") if backend == "fake cuda" else None
    x = mx.random.normal((4, 12)).astype(BF16)
    y = mx.array([0, 1, 2, 3])
    ref, ours = mlp(BF16), mlx_sgemm.nn.replace_linear(mlp(BF16))
    assert all(isinstance(layer, mlx_sgemm.nn.Linear) for layer in ours.layers)
    out = ours(x)
    assert out.dtype == BF16
    assert np.allclose(as_f64(out), as_f64(ref(x)), rtol=3e-2, atol=3e-2)
    # The fake checks each launch was handed what its kernel reads; the
    # forward's 4 rows are small_m's, which reads bfloat16 itself.
    assert launches is None or (BF16, BF16) in {launch.dtypes for launch in launches}

    def loss(model, x, y):
        return nn.losses.cross_entropy(model(x).astype(F32), y).mean()

    value, grads = nn.value_and_grad(ours, loss)(ours, x, y)
    ref_value, ref_grads = nn.value_and_grad(ref, loss)(ref, x, y)
    assert abs(value.item() - ref_value.item()) < 3e-2
    for (path, g), (_, r) in zip(tree_flatten(grads), tree_flatten(ref_grads)):
        assert g.dtype == BF16, path
        assert np.allclose(as_f64(g), as_f64(r), rtol=5e-2, atol=5e-2), path


def test_replace_linear_leaves_quantized_and_other_dtypes_and_says_so(caplog, on_cpu):
    model = nn.Sequential(nn.Linear(64, 64), nn.QuantizedLinear(64, 64), nn.Linear(64, 8))
    model.layers[2].set_dtype(mx.float64)  # a dtype the ops do not take
    with caplog.at_level(logging.INFO, logger="mlx_sgemm"):
        mlx_sgemm.nn.replace_linear(model)
    assert isinstance(model.layers[0], mlx_sgemm.nn.Linear)
    assert type(model.layers[1]) is nn.QuantizedLinear
    assert type(model.layers[2]) is nn.Linear
    left = {r.getMessage() for r in caplog.records if r.name == "mlx_sgemm" and r.levelno == logging.INFO}
    assert any("layers.1 (QuantizedLinear)" in m and "quantized" in m for m in left), left
    assert any("layers.2 (Linear)" in m and "float64" in m for m in left), left
    assert len(left) == 2
    assert model(mx.ones((2, 64))).shape == (2, 8)  # the model still runs, mixed


def test_errors_in_a_swapped_layer_name_it():
    model = mlx_sgemm.nn.replace_linear(MLP())
    with pytest.raises(TypeError, match=r"^layers\.0 \(Linear\), x @ weight\.T: a must have dtype .*, got int32$"):
        model(mx.ones((4, 12), dtype=mx.int32))
    with pytest.raises(ValueError, match=r"^layers\.0 \(Linear\), x @ weight\.T: inner dimensions differ"):
        model(mx.ones((4, 11)))
    # A layer made by hand has no path: its errors are the op's own.
    with pytest.raises(TypeError, match=r"^a must have dtype"):
        mlx_sgemm.nn.Linear(3, 2)(mx.ones((1, 3), dtype=mx.int32))


def test_operand_dtypes_are_the_documented_three():
    assert OPERAND_DTYPES == (F32, F16, BF16)


@pytest.mark.skipif(GPU_BACKEND == "cuda", reason="on a CUDA GPU explain plans for that GPU, not for wgmma=")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_explain_says_half_mma_multiplies_a_pair_of_one_half_type_without_wgmma(dtype):
    """Planned for a CUDA GPU without wgmma, a pair of one half type goes to
    half_mma: cp.async and mma.sync, the operands read in place, C rounded once."""
    e = mlx_sgemm.explain((1024, 4096), (4096, 2048), backend="cuda", dtype=dtype, wgmma=False, b_transposed=True)
    assert e.kernel == "half_mma" and e.conversions == dict.fromkeys("ab", kernel_choice.HALF_TENSOR_CORES)
    assert "rounded once to" in e.contract and "without wgmma" in e.chosen_by
    text = str(e)
    assert f"{dtype}: read as it is into shared memory by cp.async" in text and "(mma.sync)" in text
    assert "K-major tiles (W's rows)" in e.layouts["b"] and "ldmatrix.trans" in e.layouts["a"]
    mixed = mlx_sgemm.explain((1024, 4096), (4096, 2048), backend="cuda", dtype=(dtype, "float32"), wgmma=False)
    assert mixed.kernel == "tile_threads"


@pytest.mark.skipif(GPU_BACKEND == "cuda", reason="on a CUDA GPU explain plans for that GPU, not for wgmma=")
@pytest.mark.parametrize("wgmma", [True, False], ids=["half_wgmma", "half_mma"])
def test_explain_says_why_half_tiles_have_64_rows(wgmma):
    """64 rows where C has no more, or where 128-row tiles could not fill the
    SMs even with K split finely (128 x 1024 x 4096); else 128."""
    def chosen_by(m, n):
        return mlx_sgemm.explain((m, 4096), (4096, n), backend="cuda", dtype="bfloat16", wgmma=wgmma).chosen_by

    assert "a 64x128 block: C's rows fit in 64" in chosen_by(64, 4096)
    assert "a 64x128 block: 64 rows (tiles of 128 rows, K split in stretches of at least 512" in chosen_by(128, 1024)
    assert "block: 128 rows" in chosen_by(128, 4096)


@pytest.mark.skipif(GPU_BACKEND == "cuda", reason="on a CUDA GPU explain plans for that GPU")
def test_explain_says_why_half_gemv_blocks_have_16_columns():
    def chosen_by(n):
        return mlx_sgemm.explain((1, 4096), (4096, n), backend="cuda", dtype="bfloat16").chosen_by

    assert "blocks of 16 columns (blocks of 32 would number fewer than two an SM), their 8 warps" in chosen_by(4096)
    assert "blocks of 32 columns, their 4 warps" in chosen_by(14336)


@pytest.mark.skipif(GPU_BACKEND == "cuda", reason="on a CUDA GPU explain plans for that GPU")
def test_explain_says_what_a_layer_runs_for_a_token():
    """explain(layer=True): a model layer's x @ W.T, whose token alone runs
    half_gemv_one_row (FMAs in float32, W's rows read 4 warps each), and
    whose two rows run half_gemv in a layer's blocks (8 warps)."""
    alone = mlx_sgemm.explain((1, 1, 4096), (4096, 14336), backend="cuda", dtype="bfloat16", layer=True)
    assert alone.kernel == "half_gemv_one_row" and alone.source == "kernels/cuda/half_gemv_one_row.cu"
    assert "a model layer's x @ W.T" in alone.chosen_by and "4 warps each" in alone.chosen_by
    assert alone.contract.startswith("float32: FMAs in float32") and alone.contract.endswith(
        "rounded once to bfloat16 in the kernel")
    assert "W's rows), 4 warps a row" in alone.layouts["b"]
    # x and W reach the kernel as the layer holds them (launcher.layer_call): one node.
    assert alone.layouts["a"].startswith("handed to the kernel as the layer holds it")
    assert alone.layouts["b"].startswith("W handed to the kernel as the layer holds it")
    assert alone.conversions == dict.fromkeys("ab", kernel_choice.CONVERTED_ON_LOAD)
    two = mlx_sgemm.explain((2, 4096), (4096, 14336), backend="cuda", dtype="bfloat16", layer=True)
    assert two.kernel == "half_gemv" and "their 8 warps" in two.chosen_by
    # A batch of tokens against one W is one matrix of rows (ops.folded_rows), as it runs.
    batch = mlx_sgemm.explain((3, 1, 4096), (4096, 14336), backend="cuda", dtype="bfloat16", layer=True)
    assert batch.kernel == "half_gemv" and "M 3," in batch.shape and "a's batch of 3 folded into its rows" in batch.shape
    assert batch.shape == mlx_sgemm.explain((3, 1, 4096), (4096, 14336), backend="cuda", dtype="bfloat16",
                                            b_transposed=True).shape  # matmul folds them too
    # A batch of b's is a batch of products.
    assert "M 1, N 14336, K 4096, batch 3" in mlx_sgemm.explain((3, 1, 4096), (3, 4096, 14336), backend="cuda",
                                                                dtype="bfloat16").shape
    matmul = mlx_sgemm.explain((1, 1, 4096), (4096, 14336), backend="cuda", dtype="bfloat16", b_transposed=True)
    assert matmul.kernel == "half_gemv" and "their 4 warps" in matmul.chosen_by
    # matmul's one row against W's rows: half_gemv's one-row way, a warp 32 / 4 whole columns.
    assert "(one row: a warp 8 whole columns, a load 512 bytes of one, FMAs)" in matmul.layouts["b"]
    assert matmul.contract == alone.contract and matmul.conversions == alone.conversions
    assert "one row" not in two.layouts["b"] and "on the tensor cores" in two.contract
    assert two.conversions == dict.fromkeys("ab", kernel_choice.HALF_TENSOR_CORES)
    row_major = mlx_sgemm.explain((1, 1, 4096), (4096, 14336), backend="cuda", dtype="bfloat16")
    assert "one row" not in row_major.layouts["b"] and "on the tensor cores" in row_major.contract
    with pytest.raises(TypeError, match="layer"):
        mlx_sgemm.explain((1, 4096), (4096, 8), layer="yes")


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_a_gpu_without_wgmma_runs_half_mma_on_a_pair_of_one_half_type(fake_cuda, monkeypatch, dtype):
    """matmul on a faked CUDA GPU without wgmma: a pair of one half type goes
    to half_mma as it is (its result in the half type, K split with split_sum
    where tiles are few), a few rows to half_gemv, a mixed pair to
    tile_threads converting on load."""
    monkeypatch.setattr(device, "has_wgmma", lambda: False)
    a, b, x = mx.ones((300, 512), dtype=dtype), mx.ones((512, 200), dtype=dtype), mx.ones((4, 512), dtype=dtype)
    mixed = mx.ones((512, 200), dtype=F32)
    outs = [mlx_sgemm.matmul(a, b), mlx_sgemm.matmul(x, b), mlx_sgemm.matmul(a, mixed)]
    assert [launch.spec.stage for launch in fake_cuda] == ["half_mma", "half_gemv", "tile_threads"]
    assert fake_cuda[0].spec.operand_types == (name(dtype),) * 2 and fake_cuda[0].spec.output_type == name(dtype)
    assert [o.dtype for o in outs] == [dtype, dtype, F32]
    assert all(bool(mx.all(o == 512)) for o in outs)
