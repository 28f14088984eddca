"""Chapter 8's choice, without a GPU: which kernel a pair of one half type
gets on Hopper (half_wgmma, its block, its K splits and output) and on other
CUDA GPUs (half_mma), for a token's few rows (half_gemv), and what keeps the
float32 kernels."""

import mlx.core as mx
import pytest

from mlx_sgemm import ops
from mlx_sgemm.build import launcher, specs
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan


@pytest.fixture
def hopper(monkeypatch):
    monkeypatch.setattr(device, "has_wgmma", lambda: True)
    monkeypatch.setattr(device, "name", lambda: "Fake H200")


@pytest.fixture
def without_wgmma(monkeypatch):
    """A CUDA GPU without wgmma (Ampere, Ada) of 108 SMs (an A100's)."""
    monkeypatch.setattr(device, "has_wgmma", lambda: False)
    monkeypatch.setattr(device, "name", lambda: "Fake A100")
    monkeypatch.setattr(device, "cuda_multiprocessors", lambda: 108)
    kernel_choice._heuristic.cache_clear()
    yield
    kernel_choice._heuristic.cache_clear()


def route(a_shape, b_shape, dtypes, chooser=None, float32_out=False):
    chooser = chooser or kernel_choice.chooser("float32")
    return ops.route_plan(chooser, device.CUDA, a_shape, b_shape, True, dtypes, float32_out)


# (M, N, K) -> (block, K splits) on Hopper (half_wgmma): 64 rows where C has
# no more, or where tiles of 128 rows could not fill the SMs; the columns
# (128, 192 or 256) whose rounds of tiles over the 132 SMs take the least
# time (a round costing TILE_COSTS of a round of 128-wide tiles); K split
# where fewer than half of the SMs have a tile.
CASES = {
    (4096, 4096, 4096): ((128, 256), 1),
    (2048, 14336, 4096): ((128, 256), 1),
    (512, 14336, 4096): ((128, 256), 1),   # 224 tiles: 2 rounds, against 4 of 128 columns
    (512, 11008, 4096): ((128, 192), 1),   # 232 tiles: 2 rounds (2.7), against 3 of 128 columns, 2 of 256 (3.3)
    (4095, 4097, 4093): ((128, 128), 1),   # 8 rounds, against 6 of 192 (8.1) and 5 of 256 (8.25)
    (1024, 11008, 4096): ((128, 256), 1),  # 3 rounds (4.95), against 6 of 128, 4 of 192 (5.4)
    (512, 8192, 4096): ((128, 256), 1),    # 1 round (1.65), against 2
    (512, 4096, 4096): ((128, 128), 1),
    (128, 14336, 4096): ((128, 128), 1),
    (128, 4096, 4096): ((128, 128), 4),
    # 8 tiles of 128 rows, split 8 ways, would fill 64 SMs: 16 of 64 rows split 8 ways.
    (128, 1024, 4096): ((64, 128), 8),
    (32, 14336, 4096): ((64, 128), 1),
    (32, 4096, 14336): ((64, 128), 4),
}
# The same without wgmma (half_mma) on an A100's 108 SMs: always 128 columns.
MMA_CASES = {
    (4096, 4096, 4096): ((128, 128), 1),
    (512, 14336, 4096): ((128, 128), 1),
    (128, 4096, 4096): ((128, 128), 3),
    (128, 1024, 4096): ((64, 128), 6),
    (32, 14336, 4096): ((64, 128), 1),
    (32, 4096, 14336): ((64, 128), 3),
}
KINDS = {"half_wgmma": ("hopper", CASES), "half_mma": ("without_wgmma", MMA_CASES)}


@pytest.mark.parametrize("stage, mnk", [(stage, mnk) for stage, (_, cases) in KINDS.items() for mnk in cases],
                         ids=str)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("precision", kernel_choice.PRECISIONS)
def test_one_half_type_goes_to_the_half_tensor_cores(request, stage, mnk, dtype, precision):
    fixture, cases = KINDS[stage]
    request.getfixturevalue(fixture)
    m, n, k = mnk
    *_, launch = route((m, k), (k, n), (dtype, dtype), kernel_choice.chooser(precision))
    block, splits = cases[mnk]
    assert launch.spec.stage == stage and launch.spec.operand_types == (dtype, dtype)
    assert (launch.spec.block_m, launch.spec.block_n) == block and launch.k_splits == splits
    # C rounded once: by the kernel, or by split_sum after float32 partial sums.
    assert (launch.spec.output_type, launch.spec.sum_to) == ((dtype, None) if splits == 1 else ("float32", dtype))
    assert kernel_choice.operand_conversions(launch.spec, dtype, dtype) == dict.fromkeys(
        "ab", kernel_choice.HALF_TENSOR_CORES)


def test_gemm_asks_for_the_float32_product(hopper):
    for shape in ((4096, 4096), (128, 4096)):
        *_, launch = route(shape, (4096, 4096), ("bfloat16", "bfloat16"), float32_out=True)
        assert launch.spec.stage == "half_wgmma" and launch.spec.output_type == "float32"
        assert launch.spec.sum_to is None  # split partial sums added by mx.sum, in float32


# A token's products (rows the float32 choice gives the small-M kernels).
FEW_ROWS = ((1, 4096, "small_m"), (8, 14336, "small_m"), (2, 14336, "small_m_wide"))


def test_few_rows_go_to_half_gemv_which_rounds_c_itself(hopper):
    for m, n, stage in FEW_ROWS:
        *_, launch = route((m, 4096), (4096, n), ("float16", "float16"))
        assert launch.spec.stage == "half_gemv" and launch.spec.output_type == "float16"
        assert launch.spec.operand_types == ("float16", "float16") and launch.k_splits == 1
        assert kernel_choice.operand_conversions(launch.spec, "float16", "float16") == dict.fromkeys(
            "ab", kernel_choice.HALF_TENSOR_CORES)
        *_, mixed = route((m, 4096), (4096, n), ("float16", "float32"))
        assert mixed.spec.stage == stage and mixed.spec.output_type == "float32"
        *_, for_gemm = route((m, 4096), (4096, n), ("float16", "float16"), float32_out=True)
        assert for_gemm.spec.stage == "half_gemv" and for_gemm.spec.output_type == "float32"


def test_without_mma_sync_few_rows_keep_the_small_m_kernels_which_round_c_themselves(without_wgmma, monkeypatch):
    """A GPU before sm_80 (no mma.sync on halves): the small-M kernels convert
    the halves on load and round C themselves."""
    monkeypatch.setattr(device, "cuda_compute_capability", lambda: (7, 5))
    for m, n, stage in FEW_ROWS:
        *_, launch = route((m, 4096), (4096, n), ("bfloat16", "bfloat16"))
        assert launch.spec.stage == stage and launch.spec.output_type == "bfloat16"
        *_, for_gemm = route((m, 4096), (4096, n), ("bfloat16", "bfloat16"), float32_out=True)
        assert for_gemm.spec.stage == stage and for_gemm.spec.output_type == "float32"


def test_mixed_pairs_keep_the_float32_kernels(hopper, monkeypatch):
    *_, mixed = route((512, 4096), (4096, 4096), ("bfloat16", "float16"))
    assert mixed.spec.stage == "tile_wgmma" and mixed.spec.operand_types == specs.FLOAT32_OPERANDS
    monkeypatch.setattr(device, "has_wgmma", lambda: False)
    kernel_choice._heuristic.cache_clear()
    *_, other = route((512, 4096), (4096, 4096), ("bfloat16", "float16"))
    assert other.spec.stage == "tile_threads" and other.spec.operand_types == ("bfloat16", "float16")
    kernel_choice._heuristic.cache_clear()


def test_without_wgmma_few_rows_gemm_and_deterministic(without_wgmma):
    for m, n, _ in FEW_ROWS:  # mma.sync (sm_80 on)
        *_, launch = route((m, 4096), (4096, n), ("bfloat16", "bfloat16"))
        assert launch.spec.stage == "half_gemv" and launch.spec.output_type == "bfloat16"
    *_, for_gemm = route((128, 4096), (4096, 4096), ("float16", "float16"), float32_out=True)
    assert for_gemm.spec.stage == "half_mma" and for_gemm.spec.output_type == "float32"
    assert for_gemm.spec.sum_to is None
    chooser = kernel_choice.deterministic_chooser("float32")
    launches = {route((m, 1000), (1000, 512), ("float16", "float16"), chooser)[-1] for m in (1, 8, 64, 3000)}
    assert len(launches) == 1
    (launch,) = launches
    assert launch.spec.stage == "half_mma" and launch.k_splits == 1
    assert (launch.spec.block_m, launch.spec.block_n) == specs.HALF_MMA_BLOCKS[0]


def test_hopper_keeps_a_tuned_float32_kernel_for_halves(hopper):
    """On Hopper an autotuned tile_threads (a float32 candidate) stays itself
    for a pair of one half type: half_mma is the path of GPUs without wgmma."""
    tile_threads = kernel_choice.Launch(specs.spec("tile_threads", "cuda"))
    p = plan((512, 4096), (4096, 4096))
    launch = kernel_choice.for_operands(tile_threads, device.CUDA, p, ("float16", "float16"))
    assert launch.spec.stage == "tile_threads"
    without = kernel_choice.for_operands(tile_threads, device.CUDA, p, ("float16", "float16"), wgmma=False)
    assert without.spec.stage == "half_mma"


def test_deterministic_half_products_use_one_launch_for_every_shape(hopper):
    chooser = kernel_choice.deterministic_chooser("float32")
    launches = {route((m, 1000), (1000, 512), ("bfloat16", "bfloat16"), chooser)[-1] for m in (1, 8, 64, 3000)}
    assert len(launches) == 1
    (launch,) = launches
    assert launch.spec.stage == "half_wgmma" and launch.k_splits == 1


def test_half_rows_are_padded_to_16_bytes_of_halves(hopper):
    pad_k, pad_n, a_shape, b_shape, launch = route((1000, 4093), (4093, 1001), ("float16", "float16"))
    assert (pad_k, pad_n) == (3, 7) and launch.spec.stage == "half_wgmma"
    assert route((1000, 4093), (4093, 1001), ("float32", "float32"))[:2] == (3, 3)


def test_split_lengths_are_whole_half_k_tiles():
    p = plan((32, 4100), (4100, 4096))
    assert kernel_choice.half_k_splits(p, 64, 128) == 4
    assert p.k_split_length(4, specs.HALF_K_TILE) % specs.HALF_K_TILE == 0


@pytest.mark.parametrize("make", [specs.cuda_half_wgmma, specs.cuda_half_mma])
def test_bad_half_tensor_core_arguments_are_named(make):
    with pytest.raises(ValueError, match="element"):
        make("float32")
    with pytest.raises(ValueError, match="output"):
        make("float16", "bfloat16")
    with pytest.raises(ValueError, match="cannot write"):
        specs.spec("tile_threads", "cuda").reading("float16", "float16").rounding_to("float16")


def test_a_float32_autotune_entry_does_not_take_half_operands_off_the_tensor_cores(hopper, monkeypatch):
    """The autotuner times float32 operands; what it found for a shape class
    (here tile_threads) holds for them, not for a pair of one half type."""
    picked = kernel_choice.Launch(specs.spec("tile_threads", device.CUDA))
    monkeypatch.setattr(kernel_choice, "tuned", lambda backend, precision, p: picked)
    *_, float32 = route((512, 4096), (4096, 4096), ("float32", "float32"))
    assert float32 == picked
    *_, half = route((512, 4096), (4096, 4096), ("bfloat16", "bfloat16"))
    assert half.spec.stage == "half_wgmma"
    *_, few = route((4, 4096), (4096, 4096), ("bfloat16", "bfloat16"))  # the tuned kernel reads them on load
    assert few.spec.stage == "tile_threads" and few.spec.operand_types == ("bfloat16", "bfloat16")
    # A stage op's chooser is not matmul's: its kernel, whatever the operands.
    *_, stage = route((512, 4096), (4096, 4096), ("bfloat16", "bfloat16"),
                      lambda backend, p: kernel_choice.Launch(specs.spec("tile_threads", backend)))
    assert stage.spec.stage == "tile_threads"


@pytest.mark.parametrize("layer", [False, True], ids=["matmul", "layer"])
@pytest.mark.parametrize("mnk, batch, wide", [
    ((1, 14336, 4096), 1, True),    # 448 blocks of 32 columns: four an SM of 4 warps (a layer's: two of 8)
    ((8, 4096, 14336), 1, False),   # 128 blocks of 32 columns: 256 of 16, two an SM of 8 warps
    ((1, 4096, 4096), 3, True),     # 3 x 128 blocks
    ((1, 1024, 4096), 1, False),
], ids=str)
def test_half_gemv_blocks_follow_how_many_there_are(hopper, mnk, batch, wide, layer):
    """Where the output's 32-column blocks number at least two an SM, blocks
    of 4 warps, four an SM, or for a model's layer (whose products a step may
    run side by side) blocks of 8 warps, two an SM; else blocks of 16 columns
    and 8 warps, two an SM: 16 warps an SM every way."""
    m, n, k = mnk
    if layer and m == 1:
        m = 2  # a layer's token alone runs half_gemv_one_row (below); two rows make one row of blocks as one does
    a_shape = (batch, m, k) if batch > 1 else (m, k)
    *_, launch = route(a_shape, (k, n), ("bfloat16", "bfloat16"), kernel_choice.chooser("float32", layer=True)
                       if layer else None)
    warps, min_blocks, nt = ((specs.HALF_GEMV_WIDE_LAYER if layer else specs.HALF_GEMV_WIDE) if wide
                             else specs.HALF_GEMV_NARROW)
    assert launch.spec.stage == "half_gemv" and launch.k_splits == 1
    assert launch.spec.threadgroup[0] == 32 * warps and launch.spec.min_blocks == min_blocks
    assert (launch.spec.block_m, launch.spec.block_n) == (8, 16 * nt) == (8, 32 if wide else 16)
    assert 32 * warps * min_blocks == 512


def test_a_layers_token_products_take_the_layers_blocks(fake_cuda):
    """mlx_sgemm.nn's product asks for a layer's half_gemv blocks; matmul on
    the same operands for its own."""
    x, w = (mx.zeros(s, dtype=mx.bfloat16) for s in ((2, 4096), (14336, 4096)))
    ops.matmul(x, w.T)
    ops.layer_product("matmul")(x, w)
    (matmul_launch,), (layer_launch,) = ({launch.spec for launch in fake_cuda if launch.b_shape == w.T.shape
                                          and launch.spec.threadgroup[0] == t} for t in (128, 256))
    assert matmul_launch.min_blocks == specs.HALF_GEMV_WIDE[1]
    assert layer_launch.min_blocks == specs.HALF_GEMV_WIDE_LAYER[1]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_layers_token_alone_is_read_as_mlxs_gemv_reads_it(fake_cuda, dtype):
    """A layer's product of one row (a decode step's token) runs
    half_gemv_one_row, rounding to the dtype in the kernel: the layer's B is
    its weight transposed, the layout that kernel's grid is made for. matmul
    on the same operands (whose B's layout the host cannot see), a layer's
    two rows, and a deterministic layer (batch-invariant: one kernel for
    every M) run half_gemv."""
    x, w = (mx.zeros(s, dtype=getattr(mx, dtype)) for s in ((1, 1, 4096), (14336, 4096)))
    ran = {}
    for name, call in (("layer", lambda: ops.layer_product("matmul")(x, w)),
                       ("matmul", lambda: ops.matmul(x, w.T)),
                       ("two rows", lambda: ops.layer_product("matmul")(mx.concatenate([x, x], axis=1), w)),
                       ("deterministic", lambda: ops.layer_product("matmul", deterministic=True)(x, w))):
        fake_cuda.clear()
        call()
        (launch,) = fake_cuda
        ran[name] = launch.spec
    assert ran["layer"] == kernel_choice.half_gemv_one_row(dtype, dtype) == specs.cuda_half_gemv_one_row(dtype)
    assert ran["layer"].output_type == dtype and (ran["layer"].block_m, ran["layer"].block_n) == (1, 2)
    assert {ran[name].stage for name in ("matmul", "two rows")} == {"half_gemv"}
    assert ran["deterministic"].stage != "half_gemv_one_row"


@pytest.mark.parametrize("x_shape", [(1, 1, 4096), (1, 4096), (4096,)], ids=str)
def test_a_layers_token_alone_hands_the_kernel_x_and_w_as_they_are(fake_cuda, monkeypatch, x_shape):
    """half_gemv_one_row takes x at its own rank and W itself
    (launcher.layer_call): the layer's recorded graph is the kernel's node
    alone, no transposed view of W nor reshape of x before it (each a node a
    decode step's products pay for on the host). Its result has x's leading
    dimensions and is mx.matmul's; a differentiated call takes the custom
    function's way, a matmul's launch of the same kernel on W's transposed
    view, with the same value and mx.matmul's gradient."""
    handed = []
    fake_layer_call = launcher.layer_call
    monkeypatch.setattr(launcher, "layer_call", lambda spec, x_shape, w_shape: (
        handed.append((spec.stage, x_shape, w_shape)) or fake_layer_call(spec, x_shape, w_shape)))
    x = mx.random.normal(x_shape, key=mx.random.key(1)).astype(mx.bfloat16)
    w = mx.random.normal((300, 4096), key=mx.random.key(2)).astype(mx.bfloat16)
    product = ops.layer_product("matmul")
    got = product(x, w)
    assert handed == [("half_gemv_one_row", x_shape, (300, 4096))]
    assert got.shape == (*x_shape[:-1], 300) and got.dtype == mx.bfloat16
    want = mx.matmul(x.astype(mx.float32), w.astype(mx.float32).T).astype(mx.bfloat16)
    assert mx.array_equal(got, want) and mx.array_equal(product(x, w), want)  # the replay too
    loss = lambda x, w: product(x, w).astype(mx.float32).sum()  # noqa: E731
    theirs = lambda x, w: (x @ w.T).astype(mx.float32).sum()  # noqa: E731
    for ours_grad, their_grad in zip(mx.grad(loss, argnums=(0, 1))(x, w), mx.grad(theirs, argnums=(0, 1))(x, w)):
        assert ours_grad.shape == their_grad.shape
        assert mx.allclose(ours_grad.astype(mx.float32), their_grad.astype(mx.float32), rtol=1e-2, atol=1e-1)


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16], ids=str)
def test_matmuls_batch_of_rows_against_one_b_is_one_product(fake_cuda, dtype):
    """matmul of a batch of matrices against one 2-D (or 1-D) b multiplies all
    their rows as one matrix, b read once (ops.folded_rows): one launch of
    all the rows, the result in the batch's shape and equal to mx.matmul's, for a
    row-contiguous a and for a view whose batch does not merge (copied
    once); a batch of b's stays a batch of products."""
    x = mx.random.normal((2, 3, 1, 256), key=mx.random.key(0)).astype(dtype)
    w = mx.random.normal((40, 256), key=mx.random.key(1)).astype(dtype)
    view = mx.random.normal((3, 2, 2, 256), key=mx.random.key(2)).astype(dtype).transpose(1, 0, 2, 3)
    v = mx.random.normal((256,), key=mx.random.key(3)).astype(dtype)
    for a, b, out_shape in ((x, w.T, (2, 3, 1, 40)), (view, w.T, (2, 3, 2, 40)), (x, v, (2, 3, 1))):
        fake_cuda.clear()
        y = ops.matmul(a, b)  # each case a shape pair of its own: a call seen before makes no launch in Python
        (launch,) = fake_cuda
        assert launch.a_shape == (a.size // 256, 256) and launch.b_shape == b.shape
        assert y.shape == out_shape and y.dtype == dtype
        assert mx.array_equal(y, mx.matmul(a.astype(mx.float32), b.astype(mx.float32)).astype(dtype))
    fake_cuda.clear()
    ops.matmul(x, mx.broadcast_to(w.T, (2, 3, 256, 40)))
    assert [launch.a_shape[-2:] for launch in fake_cuda] == [(1, 256)]
    assert fake_cuda[0].a_shape[:-2] != ()  # a batch of 6 products
    assert ops.folded_rows((4, 2**29, 8), (8, 3)) == (4, 2**29, 8)  # 2**31 rows: M must fit an int32
    assert ops.folded_rows((3, 2**29, 8), (8, 3)) == (3 * 2**29, 8)


@pytest.mark.parametrize("kernel, deterministic", [("matmul", False), ("matmul", True), ("tile_threads", False)])
def test_a_layers_batch_of_rows_is_one_product(fake_cuda, kernel, deterministic):
    """A layer's x with batch dimensions against its one W (a batched decode
    step's tokens, a batched prompt) is multiplied as one matrix of all its
    rows, which reads W once, not once a batch entry: one launch of 6 x 4096
    rows, the result in x's batch shape, equal to mx.matmul's; the call after
    it is the remembered one, and a gradient goes through the fold."""
    x = mx.random.normal((2, 3, 1, 256), key=mx.random.key(0)).astype(mx.bfloat16)
    w = mx.random.normal((40, 256), key=mx.random.key(1)).astype(mx.bfloat16)
    product = ops.layer_product(kernel, deterministic=deterministic)
    y = product(x, w)
    (launch,) = fake_cuda
    assert launch.a_shape == (6, 256) and launch.b_shape == (256, 40)
    assert kernel != "matmul" or deterministic or launch.spec.stage == "half_gemv"
    assert y.shape == (2, 3, 1, 40) and y.dtype == mx.bfloat16
    assert mx.array_equal(y, mx.matmul(x.astype(mx.float32), w.T.astype(mx.float32)).astype(mx.bfloat16))
    assert mx.array_equal(product(x, w), y) and len(fake_cuda) == 1  # the replay makes no launch in Python
    grad = mx.grad(lambda x: product(x, w).astype(mx.float32).sum())(x)
    assert grad.shape == x.shape and mx.allclose(grad.astype(mx.float32)[1, 2, 0],
                                                 w.astype(mx.float32).sum(axis=0), atol=0.25)
