"""The TMA kernel's host side, without a GPU: tensor maps in params, their
slots in the outputs, and what a machine without the CUDA driver gets."""

import pytest

from mlx_sgemm.build import launcher, specs, tensormap
from mlx_sgemm.dispatch import kernel_choice
from mlx_sgemm.dispatch.problem import TENSOR_MAPS, plan

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

    def fake(rows, cols, box_rows):
        asked.append((rows, cols, box_rows))
        return FAKE_MAP

    monkeypatch.setattr(tensormap, "swizzled_rows", fake)
    p = plan((2, 3, 300, 1000), (1000, 260))
    params, args = launcher.launch_arguments(TMA, p, k_splits=2)
    # A's box: the block's 256 rows; B's: a 32-row k-tile; B^T's: the block's 128 columns.
    assert asked == [(300, 1000, 256), (1000, 260, 32), (260, 1000, 128)]
    assert len(params) == TENSOR_MAPS + 3 * tensormap.WORDS
    for i in range(3):
        assert tuple(params[TENSOR_MAPS + 32 * i:TENSOR_MAPS + 32 * (i + 1)]) == FAKE_MAP
    blocks = args["grid"][0] // 384
    assert blocks == 2 * 6 * 2 * 3  # splits x batch x tiles_m x tiles_n
    # 128 bytes of room to align the slots (a tensor map needs 64).
    assert args["output_shapes"] == [p.kernel_out_shape(2), (64 * blocks + 32,)]


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
