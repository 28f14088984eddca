"""How the emulations' float32 fallback (tile_threads built with
SGEMM_EMULATION_FALLBACK) is launched (no GPU): a block an SM or so, each
walking one product's tiles, checked with a stand-in for the kernel that
records its grid."""

import mlx.core as mx
import pytest

from mlx_sgemm.build import launcher, registry, specs
from mlx_sgemm.emulation import gpu, half_split

CHOICE = gpu.fixed_choice(0, 1, half_split.MAX_SPAN + 1)  # the float16 split's: one "modulus", lines looked at


@pytest.fixture
def grids(monkeypatch):
    seen = []

    def kernel(spec):
        def run(inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream):
            seen.append((spec.stage, grid[0] // threadgroup[0]))
            return [mx.zeros(output_shapes[0], dtype=output_dtypes[0])]
        return run

    monkeypatch.setattr(registry, "kernel", kernel)
    launcher.prepared.cache_clear()
    yield seen
    launcher.prepared.cache_clear()


@pytest.mark.parametrize("n, blocks", [(4096, launcher.PERSISTENT_BLOCKS), (300, 3 * 2)])
def test_the_fallback_takes_a_block_an_sm_or_a_block_a_tile_where_tiles_are_fewer(grids, n, blocks):
    spec = specs.cuda_int8_fallback()
    assert spec.persistent and (spec.block_m, spec.block_n) == (128, 256)
    a, b = mx.zeros((n, 64)), mx.zeros((64, n))
    stats = mx.zeros((4, n))
    gpu.fallback_product(a, b, CHOICE, stats, stats)
    assert grids == [("int8_fallback", blocks)]  # 300 x 300: 3 x 2 tiles of 128 x 256


def test_the_fallback_multiplies_2d_operands_and_names_them(grids):
    a, b = mx.zeros((2, 8, 64)), mx.zeros((64, 8))
    with pytest.raises(ValueError, match=r"a \(2, 8, 64\) and b \(64, 8\)"):
        gpu.fallback_product(a, b, CHOICE, mx.zeros((4, 16)), mx.zeros((4, 8)))
    assert grids == []
