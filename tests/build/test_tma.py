"""The TMA kernel's host side, without a GPU: tensor maps in params, their
slots in the outputs, and what a machine without the CUDA driver gets."""

import mlx.core as mx
import pytest

from mlx_sgemm.build import launcher, specs, tensormap
from mlx_sgemm.dispatch import kernel_choice
from mlx_sgemm.dispatch.problem import BLOCKS_PER_MATRIX, P_BATCH_SHAPE, TENSOR_MAPS, plan

TMA = specs.cuda_wgmma("matmul_tf32_wgmma", SPLIT=False, BM=256, IN_FLIGHT=True, LOOKAHEAD=1, TMA=1)
FAKE_MAP = tuple(range(1, tensormap.WORDS + 1))


def test_tma_spec_declares_its_maps():
    assert TMA.output_names == ("c", "maps") and TMA.tensor_maps
    assert not specs.spec("tile_wgmma", "cuda").tensor_maps
    assert "#define SGEMM_TENSOR_MAPS 1" in TMA.header()


@pytest.mark.parametrize("split, tma", [(True, 1), (False, 2)])
def test_tma_is_for_tf32_only(split, tma):
    with pytest.raises(ValueError, match="TMA"):
        specs.cuda_wgmma(SPLIT=split, TMA=tma)


def test_tf32_tall_products_take_the_tma_kernel():
    assert kernel_choice._hopper("tf32", 4096).template == TMA.template
    assert not kernel_choice._hopper("float32", 4096).tensor_maps
    assert not kernel_choice._hopper("tf32", 100).tensor_maps


def test_params_carry_a_and_b_maps_after_the_batch_shape(monkeypatch):
    asked = []

    def fake(rows, cols, box_rows, dtype):
        asked.append((rows, cols, box_rows, dtype))
        return FAKE_MAP

    monkeypatch.setattr(tensormap, "swizzled_rows", fake)
    p = plan((2, 3, 300, 1000), (1000, 260))
    params, args = launcher.launch_arguments(TMA, p, k_splits=2)
    # A's box: the block's 256 rows; B's: a 32-row k-tile; B^T's: the block's
    # 128 columns; A^T's (read by half_wgmma alone): a k-tile's rows.
    assert asked == [(300, 1000, 256, "float32"), (1000, 260, 32, "float32"), (260, 1000, 128, "float32"),
                     (1000, 300, 32, "float32")]
    assert len(params) == TENSOR_MAPS + 4 * tensormap.WORDS
    for i in range(4):
        assert tuple(params[TENSOR_MAPS + 32 * i:TENSOR_MAPS + 32 * (i + 1)]) == FAKE_MAP
    blocks = args["grid"][0] // 384
    assert blocks == 2 * 6 * 2 * 3  # splits x batch x tiles_m x tiles_n
    # 128 bytes of room to align the slots (a tensor map needs 64).
    assert args["output_shapes"] == [p.kernel_out_shape(2), (64 * blocks + 32,)]


def test_half_wgmma_maps_its_operands_in_halves_and_walks_tiles_persistently(monkeypatch):
    """half_wgmma: boxes 128 bytes (64 halves) wide, k-tiles of 64, the maps of
    A^T and B for MN-major tiles; a grid of about a block an SM for each output
    matrix, their count in params[BLOCKS_PER_MATRIX]; C in bfloat16."""
    asked = []

    def fake(rows, cols, box_rows, dtype):
        asked.append((rows, cols, box_rows, dtype))
        return FAKE_MAP

    monkeypatch.setattr(tensormap, "swizzled_rows", fake)
    spec = specs.cuda_half_wgmma("bfloat16", BM=128, BN=256)
    p = plan((3, 1000, 4096), (4096, 3000))
    params, args = launcher.launch_arguments(spec, p)
    assert asked == [(1000, 4096, 128, "bfloat16"), (4096, 3000, 64, "bfloat16"), (3000, 4096, 256, "bfloat16"),
                     (4096, 1000, 64, "bfloat16")]
    per_matrix = 132 // 3  # 8 x 12 = 96 tiles a matrix, 44 blocks each
    assert params[BLOCKS_PER_MATRIX] == per_matrix
    assert args["grid"] == (3 * per_matrix * 384, 1, 1)
    assert args["output_dtypes"][0] == mx.bfloat16
    small = plan((64, 4096), (4096, 512))  # 1 x 2 tiles: a block each
    assert launcher.launch_arguments(spec, small)[0][BLOCKS_PER_MATRIX] == 2


def test_a_split_half_wgmma_splits_k_in_whole_k_tiles():
    """Its splits start on its 64-element k-tiles (the TMA copies whole ones)."""
    spec = specs.cuda_half_wgmma("float16", "float32", BM=64, BN=128)
    params, _ = launcher.launch_arguments(spec, plan((32, 4100), (4100, 4096)), k_splits=4)
    assert params[P_BATCH_SHAPE] == 1088  # ceil(4100 / 256) * 64


def test_no_driver_no_maps(monkeypatch):
    """Without libcuda the kernel gets zeros, which it reads as 'copy by cp.async'."""
    monkeypatch.setattr(tensormap, "_encode_tiled", lambda: None)
    tensormap.swizzled_rows.cache_clear()
    try:
        assert tensormap.swizzled_rows(256, 256, 128) == tensormap.NONE
        assert not tensormap.available()
    finally:
        tensormap.swizzled_rows.cache_clear()


@pytest.mark.parametrize("rows, cols, box_rows", [(256, 1001, 128), (256, 256, 0), (256, 256, 257)])
def test_no_map_for_what_the_tma_cannot_copy(rows, cols, box_rows):
    """Rows not 16-byte aligned, or a box the TMA cannot take: no map."""
    assert tensormap.swizzled_rows(rows, cols, box_rows) == tensormap.NONE


def test_specs_with_other_macros_get_other_names():
    """MLX builds one module per kernel name: the TMA kernel's macros must not
    land in (or miss from) another spec's build of the same stage."""
    plain = specs.cuda_wgmma("matmul_tf32_wgmma", SPLIT=False, BM=256)
    assert TMA.name != plain.name
    assert plain.name == specs.cuda_wgmma("matmul_tf32_wgmma", SPLIT=False, BM=128).name  # macros alike


def test_tf32_wgmma_takes_a_rounded_to_nearest_tf32(monkeypatch):
    """tile_wgmma at TF32 copying A by the TMA multiplies A rounded by
    tf32_round.cu, its tensor cores would truncate it; the instances that copy
    A by cp.async round its tiles in shared memory and, like 3xTF32 (which
    splits A itself) and every other kernel, take A as it is. The kernel
    object is stubbed: what it is handed is checked."""
    handed = []
    monkeypatch.setattr(launcher, "tf32_rounding", lambda shape: lambda x, stream: x + 1000.0)
    monkeypatch.setattr(launcher, "kernel_call", lambda spec, p, k_splits: (
        lambda inputs, **kwargs: handed.append(inputs[0]) or [mx.zeros(kwargs["output_shapes"][0])], None,
        {"output_shapes": [p.kernel_out_shape(k_splits)]}))
    a, b = mx.ones((40, 64)), mx.ones((64, 24))
    tf32 = kernel_choice.wgmma_variants("tf32")
    by_tma = [spec for spec in tf32 if spec.tensor_maps]
    assert by_tma and all(spec.rounds_a_to_tf32 and not spec.rounds_a_tiles_to_tf32 for spec in by_tma)
    by_copies = [spec for spec in tf32 if not spec.tensor_maps]
    assert by_copies and all(spec.rounds_a_tiles_to_tf32 and not spec.rounds_a_to_tf32 for spec in by_copies)
    others = kernel_choice.wgmma_variants("float32") + [s for s in specs.specs("cuda") if s.stage != "tile_wgmma"]
    assert not any(spec.rounds_a_to_tf32 or spec.rounds_a_tiles_to_tf32 for spec in others)
    assert not specs.cuda_tf32_round().rounds_a_to_tf32
    for spec, rounded in ((by_tma[0], True), (by_copies[0], False), (kernel_choice.wgmma_variants("float32")[0], False)):
        launcher.prepared.cache_clear()
        launcher.launch(spec, a, b)
        assert (handed[-1] == (1001.0 if rounded else 1.0)).all().item()
    launcher.prepared.cache_clear()
    launcher.launch(by_tma[0], a.astype(mx.float16), b.astype(mx.float16))  # exact in TF32: as it is
    assert (handed[-1] == 1.0).all().item()
