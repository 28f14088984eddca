"""matmul's kernel choice and its K split, as pure logic (no GPU needed)."""

import pytest

from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan

WGMMA = specs.spec("tile_wgmma", "cuda")


def test_few_tiles_and_long_k_split_k():
    # 128 x 1024: 8 tiles of 128x128 on 132 SMs; K = 4096 allows 4 splits of 1024.
    p = plan((128, 4096), (4096, 1024))
    assert kernel_choice.k_splits(device.CUDA, WGMMA, p) == 4
    assert p.k_split_length(4) == 1024


def test_tiles_that_leave_sms_idle_split():
    # 32 tiles (128 x 4096): 4 splits make 128 blocks on 132 SMs; 64 (TF32's
    # 256-row blocks at 512 x 4096): 2. One product at a time, the idle SMs
    # cost more than the partial products (measured).
    assert kernel_choice.k_splits(device.CUDA, WGMMA, plan((128, 4096), (4096, 4096))) == 4
    tf32 = kernel_choice.wgmma_variants("tf32")[-1]
    assert tf32.block_m == 256 and kernel_choice.k_splits(device.CUDA, tf32, plan((512, 4096), (4096, 4096))) == 2
    # 67 tiles and more: a split would need a second wave.
    assert kernel_choice.k_splits(device.CUDA, WGMMA, plan((128 * 67, 4096), (4096, 128))) == 1


def test_splits_stay_within_one_wave_of_blocks():
    # 12 tiles and K = 16384 (16 stretches of 1024): 11 splits make 132 blocks,
    # one wave on 132 SMs; 12 would start a second.
    p = plan((128, 16384), (16384, 1536))
    assert kernel_choice.k_splits(device.CUDA, WGMMA, p) == 11


def test_enough_tiles_or_short_k_do_not_split():
    assert kernel_choice.k_splits(device.CUDA, WGMMA, plan((8192, 4096), (4096, 8192))) == 1
    assert kernel_choice.k_splits(device.CUDA, WGMMA, plan((128, 1500), (1500, 128))) == 1


def test_splits_cover_odd_k():
    p = plan((100, 5000), (5000, 300))
    splits = kernel_choice.k_splits(device.CUDA, WGMMA, p)
    length = p.k_split_length(splits)
    assert splits > 1 and (splits - 1) * length < 5000 <= splits * length


def test_only_the_hopper_pipeline_splits():
    p = plan((128, 4096), (4096, 1024))
    assert kernel_choice.k_splits(device.CUDA, specs.spec("tile_threads", "cuda"), p) == 1
    assert kernel_choice.k_splits(device.METAL, WGMMA, p) == 1


def test_variants_include_small_m_on_cuda():
    assert specs.spec("small_m", "cuda") in kernel_choice.variants(device.CUDA)
    assert all(s.backend == "metal" for s in kernel_choice.variants(device.METAL))


def test_metal_candidates_try_k_splits_for_long_k():
    found = kernel_choice.candidates(device.METAL, "float32", plan((64, 4096), (4096, 64)))
    long_k = {(c.spec.stage, c.k_splits) for c in found}
    assert ("tile_async", 4) in long_k and ("small_m", 1) in long_k
    short_k = kernel_choice.candidates(device.METAL, "float32", plan((64, 512), (512, 64)))
    assert {c.k_splits for c in short_k} == {1}
    assert kernel_choice.heuristic(device.METAL, "float32", plan((4, 512), (512, 64))).spec.stage == "small_m"


def test_big_unaligned_products_are_padded_to_multiples_of_4():
    assert kernel_choice.padding(device.CUDA, plan((4095, 4093), (4093, 4097))) == (3, 3)
    assert kernel_choice.padding(device.CUDA, plan((2, 600, 1024), (1024, 514))) == (0, 2)


def test_aligned_small_or_metal_products_are_not_padded():
    assert kernel_choice.padding(device.CUDA, plan((4096, 4096), (4096, 4096))) == (0, 0)
    assert kernel_choice.padding(device.CUDA, plan((100, 4093), (4093, 4097))) == (0, 0)  # few rows
    assert kernel_choice.padding(device.METAL, plan((4095, 4093), (4093, 4097))) == (0, 0)


def test_hopper_block_height_follows_the_rows_of_c(monkeypatch):
    monkeypatch.setattr(device, "has_wgmma", lambda: True)
    heights = {m: kernel_choice.choose(device.CUDA, "float32", plan((m, 256), (256, 512))).block_m
               for m in (9, 32, 33, 64, 65, 4096)}
    assert heights == {9: 32, 32: 32, 33: 64, 64: 64, 65: 128, 4096: 128}
    tf32 = kernel_choice.choose(device.CUDA, "tf32", plan((20, 256), (256, 512)))
    assert tf32.block_m == 32 and dict(tf32.template)["SPLIT"] is False
    assert kernel_choice.choose(device.CUDA, "tf32", plan((4096, 256), (256, 512))).block_m == 256
    assert kernel_choice.choose(device.CUDA, "float32", plan((4096, 256), (256, 512))).block_m == 128
    assert {s.block_m for s in kernel_choice.variants(device.CUDA) if s.source_file == "tile_wgmma.cu"} == {32, 64, 128, 256}


@pytest.mark.parametrize("precision, a_shape, b_shape, split", [
    ("float32", (4096, 4096), (4096, 4096), True), ("float32", (6144, 6144), (6144, 6144), True),
    ("float32", (8192, 4096), (4096, 14336), True), ("float32", (16384, 4096), (4096, 4096), True),
    ("float32", (2048, 4096), (4096, 14336), True), ("float32", (8192, 2048), (2048, 8192), True),
    ("float32", (8192, 140000), (140000, 8192), True),  # no integer bound on K: float32 sums
    ("float32", (3072, 3072), (3072, 3072), True), ("float32", (2048, 2048), (2048, 2048), True),
    ("float32", (1024, 8192), (8192, 8192), False),  # a side below HALF_SPLIT_MIN_SIDE: untimed
    ("float32", (2, 8192, 8192), (8192, 8192), False),  # a batch: the pipeline
    ("tf32", (8192, 8192), (8192, 8192), True), ("tf32", (8192, 4096), (4096, 14336), True),
    ("tf32", (16384, 4096), (4096, 16384), True), ("tf32", (4096, 4096), (4096, 4096), True),
    ("tf32", (8192, 2048), (2048, 8192), True),  # K of 2048
    ("tf32", (2048, 4096), (4096, 14336), True),  # harmonic mean of M and N 3584
    ("tf32", (4096, 2048), (2048, 4096), True),  # M N K = HALF_TF32_MIN_VOLUME
    ("tf32", (3072, 3072), (3072, 3072), False),  # below HALF_TF32_MIN_VOLUME: level with the pipeline
    ("tf32", (2048, 14336), (14336, 4096), False),  # harmonic mean 2731: level with it
    ("tf32", (2048, 4096), (4096, 4096), False), ("tf32", (2048, 2048), (2048, 2048), False),
    ("tf32", (8192, 1024), (1024, 8192), False),  # K below HALF_TF32_MIN_K
    ("tf32", (2, 8192, 8192), (8192, 8192), False),
])
def test_hopper_takes_the_float16_split_for_big_products(precision, a_shape, b_shape, split):
    """float32: the two-part split; TF32: the one-part split, where M and N are large."""
    p = plan(a_shape, b_shape)
    spec, rule = kernel_choice.choose_with_rule(device.CUDA, precision, p, wgmma=True)
    ours, others = (((kernel_choice.HALF_SPLIT, kernel_choice.HALF_SPLIT_NARROW), (kernel_choice.HALF_SPLIT_TF32,))
                    if precision == "float32" else
                    ((kernel_choice.HALF_SPLIT_TF32,), (kernel_choice.HALF_SPLIT, kernel_choice.HALF_SPLIT_NARROW)))
    assert (spec in ours) == split, rule
    assert kernel_choice.is_emulated(kernel_choice.Launch(spec)) == split
    assert ("float16 split" in rule) == split
    assert spec not in (*others, kernel_choice.EMULATED)  # the INT8 emulation: slower than the split wherever timed
    # Never without wgmma, or deterministic (a row must not depend on the others).
    assert not kernel_choice.is_emulated(kernel_choice.Launch(kernel_choice.choose(device.CUDA, precision, p, wgmma=False)))
    assert not kernel_choice.is_emulated(kernel_choice.deterministic(device.CUDA, precision, wgmma=True))


def test_each_emulation_launch_names_its_op():
    import mlx_sgemm

    assert kernel_choice.emulation_op(kernel_choice.Launch(kernel_choice.HALF_SPLIT)) is mlx_sgemm.fp16_emulated
    assert kernel_choice.emulation_op(kernel_choice.Launch(kernel_choice.EMULATED)) is mlx_sgemm.int8_emulated
    tf32 = kernel_choice.emulation_op(kernel_choice.Launch(kernel_choice.HALF_SPLIT_TF32))
    assert tf32.func is mlx_sgemm.fp16_emulated and tf32.keywords == {"precision": "tf32"}


def test_the_autotuner_tries_the_emulations_on_hopper_float32(monkeypatch):
    monkeypatch.setattr(device, "has_wgmma", lambda: True)
    float32 = kernel_choice.candidates(device.CUDA, "float32", plan((300, 500), (500, 700)))
    assert {c.spec.stage for c in float32 if kernel_choice.is_emulated(c)} == {
        kernel_choice.HALF_SPLIT.stage, kernel_choice.EMULATED.stage}
    long_k = kernel_choice.candidates(device.CUDA, "float32", plan((300, 140000), (140000, 700)))
    assert {c.spec.stage for c in long_k if kernel_choice.is_emulated(c)} == {kernel_choice.HALF_SPLIT.stage}
    tf32 = kernel_choice.candidates(device.CUDA, "tf32", plan((300, 500), (500, 700)))
    assert {c.spec.stage for c in tf32 if kernel_choice.is_emulated(c)} == {kernel_choice.HALF_SPLIT_TF32.stage}
    for other in (kernel_choice.candidates(device.CUDA, "float32", plan((3, 300, 500), (500, 700))),
                  kernel_choice.candidates(device.CUDA, "float32", plan((8, 500), (500, 700))),
                  kernel_choice.candidates(device.CUDA, "tf32", plan((8, 500), (500, 700)))):
        assert not any(kernel_choice.is_emulated(c) for c in other)


def test_tile_async_fits_the_shared_memory_of_the_gpu_it_runs_on():
    """Hopper's tile_async has a loading warpgroup (setmaxnreg) and rings that
    take 208 of the 227 KB a Hopper block may have; elsewhere (an A100's block
    may have 163 KB) the 8 multiplying warps copy and split too, BK 16 with
    four stages."""
    hopper = kernel_choice.stage_spec("tile_async", device.CUDA, wgmma=True)
    other = kernel_choice.stage_spec("tile_async", device.CUDA, wgmma=False)
    assert hopper == specs.spec("tile_async", device.CUDA)
    assert 163 * 1024 < hopper.shared_memory <= 227 * 1024
    assert dict(hopper.template)["LOADERS"] == 4 and hopper.threadgroup == (384, 1, 1)
    assert hopper.min_blocks == 1
    assert other.shared_memory <= 163 * 1024 and other.stage == "tile_async"
    assert dict(other.template)["LOADERS"] == 0 and other.threadgroup == (256, 1, 1)
    assert dict(other.template)["BK"] == 16


def test_a_loading_warpgroup_is_for_split_products_alone():
    """The TF32 pass keeps its 8 warps copying: only 3xTF32 has the split that
    the loaders do."""
    with pytest.raises(ValueError, match="LOADERS"):
        specs.cuda_pipelined(SPLIT=False)
    assert dict(specs.cuda_pipelined(SPLIT=False, LOADERS=0).template)["LOADERS"] == 0


def test_tile_simdgroup_has_a_loading_warpgroup_only_where_setmaxnreg_is():
    """Hopper's tile_simdgroup hands registers from its loading warpgroup to the
    multiplying ones (setmaxnreg, sm_90a only); elsewhere the 8 multiplying
    warps load too, with two buffers and 256 threads, as MLX is told."""
    hopper = kernel_choice.stage_spec("tile_simdgroup", device.CUDA, wgmma=True)
    other = kernel_choice.stage_spec("tile_simdgroup", device.CUDA, wgmma=False)
    assert hopper == specs.spec("tile_simdgroup", device.CUDA)
    assert dict(hopper.template)["LOADERS"] == 4 and hopper.threadgroup == (384, 1, 1)
    assert hopper.min_blocks == 1 and hopper.shared_memory <= 227 * 1024
    assert dict(other.template)["LOADERS"] == 0 and other.threadgroup == (256, 1, 1)
    assert dict(other.template)["STAGES"] == 2 and other.shared_memory <= 163 * 1024
    assert other.stage == "tile_simdgroup" and other.name != hopper.name


# (M, N) -> the float16 split's products block at float32 on 132 SMs: 128 x 128
# where its rounds of tiles, each NARROW_PRODUCTS_TILE_COST of a round of 128 x
# 192, take less time (the shapes measured for the rule, H200).
@pytest.mark.parametrize("mn, block_n", [
    ((2048, 2048), 128),    # 256 tiles: 2 rounds, against 2 of 176 tiles a third wider
    ((4096, 4096), 128),    # 8 rounds (5.5), against 6
    ((2048, 4096), 128), ((4096, 2048), 128), ((2048, 14336), 128), ((4095, 4097), 128),
    ((3072, 3072), 192),    # 5 rounds (3.45), against 3
    ((8192, 8192), 192),    # 32 rounds (22.1), against 21
])
def test_the_float16_split_takes_narrow_blocks_where_they_fill_the_rounds(mn, block_n):
    spec = kernel_choice.half_split_spec("float32", *mn, sms=kernel_choice.HOPPER_SMS)
    assert (spec.block_m, spec.block_n) == (128, block_n)
    assert spec.stage == kernel_choice.HALF_SPLIT.stage
    assert kernel_choice.half_split_spec("tf32", *mn) is kernel_choice.HALF_SPLIT_TF32
