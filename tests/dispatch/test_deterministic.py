"""``matmul(..., deterministic=True)``'s launch, without a GPU: one kernel per
(precision, backend) whatever M and the batch, K never split, no padding, the
autotune cache not consulted (kernel choice as pure logic, and the launches
made on conftest's faked CUDA device)."""

import mlx.core as mx
import mlx.nn as nn
import pytest

import mlx_sgemm
from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import device, kernel_choice, tuning_cache
from mlx_sgemm.dispatch.problem import plan

ROWS = (1, 7, 64, 4096)
BATCHES = [(), (3,), (2, 5)]


def plans(k, n):
    return [plan((*batch, m, k), (k, n)) for m in ROWS for batch in BATCHES]


@pytest.mark.parametrize("backend, wgmma", [("cuda", True), ("cuda", False), ("metal", False)])
@pytest.mark.parametrize("precision", kernel_choice.PRECISIONS)
def test_one_launch_for_every_m_and_batch(monkeypatch, backend, wgmma, precision):
    monkeypatch.setattr(device, "has_wgmma", lambda: wgmma)
    chosen = {kernel_choice.deterministic_chooser(precision)(backend, p)
              for k, n in ((4096, 1024), (1027, 515), (64, 16)) for p in plans(k, n)}
    assert len(chosen) == 1
    (launch,) = chosen
    assert launch.k_splits == 1
    # The kernel for many rows: not small_m, on Hopper tile_wgmma's 128-row blocks.
    assert launch.spec == kernel_choice.choose(backend, precision, None)
    assert launch.spec.stage not in ("small_m", "small_m_wide")
    if wgmma:
        assert launch.spec.source_file == "tile_wgmma.cu" and launch.spec.block_m == 128
    # Whereas the default's choice does follow M (and splits K), as before.
    heuristic = {kernel_choice.heuristic(backend, precision, p) for p in plans(4096, 1024)}
    assert len(heuristic) > 1


def test_the_launches_on_a_gpu(fake_cuda, tmp_path, monkeypatch):
    """Through the op: the same spec for every M and batch, one split, operands
    as given (no padding), whatever the autotune cache says."""
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(tmp_path / "autotune.json"))
    k, n = 2051, 515  # rows not 16-byte aligned: the default pads from 512 rows on
    # A planted entry for every shape class below: the default mode follows it.
    planted = kernel_choice.Launch(specs.spec("tile_threads", "cuda"), 2)
    for m in ROWS:
        for batch in BATCHES:
            tuning_cache.store(device.name(), "float32", plan((*batch, m, k), (k, n)), planted.key, {})
    b = mx.random.normal((k, n))
    for m in ROWS:
        for batch in BATCHES:
            mlx_sgemm.matmul(mx.random.normal((*batch, m, k)), b, deterministic=True)
    assert len({launch.spec for launch in fake_cuda}) == 1
    assert {launch.k_splits for launch in fake_cuda} == {1}
    assert {launch.b_shape for launch in fake_cuda} == {(k, n)}  # unpadded
    assert fake_cuda[0].spec == kernel_choice.deterministic(device.CUDA, "float32").spec
    fake_cuda.clear()
    mlx_sgemm.matmul(mx.random.normal((7, k)), b)  # the default mode: the planted launch
    assert [(launch.spec, launch.k_splits) for launch in fake_cuda] == [(planted.spec, planted.k_splits)]


def test_the_stage_ops_are_deterministic_already(fake_cuda):
    b = mx.random.normal((33, 20))
    for m in ROWS:
        mlx_sgemm.tile_simdgroup(mx.random.normal((m, 33)), b)
    assert len({(launch.spec, launch.k_splits) for launch in fake_cuda}) == 1


def test_layers_take_deterministic():
    layer = mlx_sgemm.nn.Linear(8, 4, deterministic=True)
    assert layer.deterministic and "deterministic=True" in repr(layer)
    assert not mlx_sgemm.nn.Linear(8, 4).deterministic
    model = nn.Sequential(nn.Linear(8, 4), nn.Linear(4, 2))
    mlx_sgemm.nn.replace_linear(model, deterministic=True)
    assert all(layer.deterministic for layer in model.layers)
    x = mx.random.normal((3, 8))
    assert mx.array_equal(model(x), model.layers[1](model.layers[0](x))).item()
