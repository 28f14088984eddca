"""matmul's kernel choice and its K split, as pure logic (no GPU needed)."""

from mlx_sgemm import adaptive, device, specs
from mlx_sgemm.problem import plan

WGMMA = specs.spec("tile_wgmma", "cuda")


def test_few_tiles_and_long_k_split_k():
    # 128 x 4096: 32 tiles of 128x128 on 132 SMs; K = 4096 allows 4 splits of 1024.
    p = plan((128, 4096), (4096, 4096))
    assert adaptive.k_splits(device.CUDA, WGMMA, p) == 4
    assert p.k_split_length(4) == 1024


def test_enough_tiles_or_short_k_do_not_split():
    assert adaptive.k_splits(device.CUDA, WGMMA, plan((8192, 4096), (4096, 8192))) == 1
    assert adaptive.k_splits(device.CUDA, WGMMA, plan((128, 1500), (1500, 128))) == 1


def test_splits_cover_odd_k():
    p = plan((100, 5000), (5000, 300))
    splits = adaptive.k_splits(device.CUDA, WGMMA, p)
    length = p.k_split_length(splits)
    assert splits > 1 and (splits - 1) * length < 5000 <= splits * length


def test_only_the_hopper_pipeline_splits():
    p = plan((128, 4096), (4096, 4096))
    assert adaptive.k_splits(device.CUDA, specs.spec("tile_threads", "cuda"), p) == 1
    assert adaptive.k_splits(device.METAL, WGMMA, p) == 1


def test_variants_include_small_m_on_cuda():
    assert specs.spec("small_m", "cuda") in adaptive.variants(device.CUDA)
    assert all(s.backend == "metal" for s in adaptive.variants(device.METAL))


def test_metal_candidates_try_k_splits_for_long_k():
    found = adaptive.candidates(device.METAL, "float32", plan((64, 4096), (4096, 64)))
    long_k = {(c.spec.stage, c.k_splits) for c in found}
    assert ("tile_async", 4) in long_k and ("small_m", 1) in long_k
    short_k = adaptive.candidates(device.METAL, "float32", plan((64, 512), (512, 64)))
    assert {c.k_splits for c in short_k} == {1}
    assert adaptive.heuristic(device.METAL, "float32", plan((4, 512), (512, 64))).spec.stage == "small_m"
