"""The autotuner and its cache, without a GPU: kernels and timings are faked, the
selection, the accuracy gate, the cache file and matmul's use of it are real."""

import json
import warnings

import mlx.core as mx
import pytest

import mlx_sgemm
from mlx_sgemm import autotuning
from mlx_sgemm.bench import timing
from mlx_sgemm.dispatch import device, kernel_choice, tuning_cache
from mlx_sgemm.dispatch.problem import plan


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "tune" / "autotune.json"
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(path))
    return path


@pytest.fixture
def fake_hopper(monkeypatch):
    """A CUDA Hopper GPU whose kernels are mx.matmul, except tile_threads (wrong),
    and whose timings favour tile_wgmma with STAGES=3 and no K split."""
    monkeypatch.setattr(device, "backend", lambda stream=None: device.CUDA)
    monkeypatch.setattr(device, "has_wgmma", lambda: True)
    monkeypatch.setattr(device, "name", lambda: "Fake H200")
    ran = []

    def launch(spec, a, b, stream=None, *, k_splits=1):
        ran.append((spec, k_splits))
        c = mx.matmul(a, b)
        return c + 1.0 if spec.stage == "tile_threads" else c

    def median_seconds(fn, repeats=20):
        fn()
        spec, splits = ran[-1]
        fast = dict(spec.template).get("STAGES") == 3 and splits == 1
        return 1e-3 if fast else 2e-3 + 1e-4 * splits

    def emulation_op(launch):
        def run(a, b, stream=None):
            ran.append((launch.spec, 1))
            return mx.matmul(a, b)
        return run

    monkeypatch.setattr(autotuning.launcher, "launch", launch)
    monkeypatch.setattr(autotuning.kernel_choice, "emulation_op", emulation_op)
    monkeypatch.setattr(timing, "median_seconds", median_seconds)
    return ran


def test_shape_classes_round_up_to_powers_of_two():
    assert tuning_cache.shape_class(plan((100, 300), (300, 5000))) == "M128-N8192-K512-B1"
    assert tuning_cache.shape_class(plan((3, 1, 5, 7), (2, 7, 1))) == "M8-N1-K8-B8"  # batch 3 x 2


def test_autotune_picks_the_fastest_accurate_candidate(cache, fake_hopper):
    a, b = mx.random.normal((100, 4096)), mx.random.normal((4096, 300))
    result = mlx_sgemm.autotune(a, b)
    assert result["choice"].startswith("tile_wgmma[") and "STAGES=3" in result["choice"]
    assert result["choice"].endswith("/1")
    assert any(key.startswith("tile_threads") for key in result["rejected"])  # wrong results
    assert all(not key.startswith("tile_threads") for key in result["seconds"])
    assert any(key.startswith("int8_emulated[") for key in result["seconds"])  # the INT8 emulation, timed too
    stored = json.loads(cache.read_text())
    assert stored["version"] == tuning_cache.VERSION
    (entry,) = stored["entries"].values()
    assert entry["choice"] == result["choice"]
    # matmul now launches the winner for every shape of the class.
    p = plan((120, 4000), (4000, 260))
    assert kernel_choice.chooser("float32")(device.CUDA, p).key == result["choice"]
    assert kernel_choice.tuned(device.CUDA, "tf32", p) is None  # another precision: untuned


def test_corrupt_or_foreign_cache_is_ignored_then_replaced(cache, fake_hopper):
    cache.parent.mkdir(parents=True)
    p = plan((100, 4096), (4096, 300))
    for junk in ("{not json", json.dumps({"version": 0, "entries": {}}), json.dumps([1, 2])):
        cache.write_text(junk)
        tuning_cache._loaded = None
        with pytest.warns(UserWarning, match="ignoring the autotune cache"):
            assert tuning_cache.lookup("Fake H200", "float32", p) is None
        assert kernel_choice.chooser("float32")(device.CUDA, p) == kernel_choice.heuristic(device.CUDA, "float32", p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlx_sgemm.autotune(mx.random.normal((100, 4096)), mx.random.normal((4096, 300)))
    assert json.loads(cache.read_text())["version"] == tuning_cache.VERSION


def test_a_tuned_split_applies_to_the_whole_shape_class(cache, fake_hopper):
    # K = 2048 offers splits 1, 2, 4; K = 2000 (same class) offers only 1, yet
    # the split that won applies to it too (a K split is valid for any K).
    tuned_for = plan((300, 2048), (2048, 500))
    winner = next(c for c in kernel_choice.candidates(device.CUDA, "float32", tuned_for) if c.k_splits > 1)
    tuning_cache.store("Fake H200", "float32", tuned_for, winner.key, {winner.key: 1.0})
    p = plan((280, 2000), (2000, 470))
    assert all(c.k_splits == 1 for c in kernel_choice.candidates(device.CUDA, "float32", p))
    assert kernel_choice.chooser("float32")(device.CUDA, p) == winner


def test_corrupt_split_count_falls_back_to_the_heuristic(cache, fake_hopper):
    p = plan((100, 4096), (4096, 300))  # K = 4096: at most 128 splits of 32
    spec_key = kernel_choice.heuristic(device.CUDA, "float32", p).key.rpartition("/")[0]
    for splits in ("0", "129", "x"):
        tuning_cache.store("Fake H200", "float32", p, f"{spec_key}/{splits}", {})
        assert kernel_choice.tuned(device.CUDA, "float32", p) is None
    tuning_cache.store("Fake H200", "float32", p, f"{spec_key}/128", {})
    assert kernel_choice.tuned(device.CUDA, "float32", p).k_splits == 128


def test_stale_entry_falls_back_to_the_heuristic(cache, monkeypatch):
    monkeypatch.setattr(device, "name", lambda: "Fake H200")
    p = plan((100, 4096), (4096, 300))
    tuning_cache.store("Fake H200", "float32", p, "no_such_kernel[]/1", {"no_such_kernel[]/1": 1.0})
    assert kernel_choice.tuned(device.CUDA, "float32", p) is None
    assert kernel_choice.chooser("float32")(device.CUDA, p) == kernel_choice.heuristic(device.CUDA, "float32", p)


def test_autotune_needs_a_gpu(monkeypatch):
    monkeypatch.setattr(device, "backend", lambda stream=None: device.CPU_FALLBACK)
    with pytest.raises(RuntimeError, match="needs an MLX GPU backend"):
        mlx_sgemm.autotune(mx.ones((4, 4)), mx.ones((4, 4)))


def test_autotune_validates_like_matmul():
    with pytest.raises(TypeError, match="b must"):
        mlx_sgemm.autotune(mx.ones((4, 4)), [1.0])
    with pytest.raises(ValueError, match="precision"):
        mlx_sgemm.autotune(mx.ones((4, 4)), mx.ones((4, 4)), precision="fp16")
