"""Where the autotune cache lives, and that processes storing at once lose nothing."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlx_sgemm.dispatch import tuning_cache
from mlx_sgemm.dispatch.problem import plan

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(tuning_cache, "_loaded", None)
    yield
    tuning_cache._loaded = None


def test_xdg_cache_home_is_honoured(fresh, monkeypatch, tmp_path):
    if sys.platform != "linux":
        pytest.skip("XDG_CACHE_HOME is the Linux convention")
    monkeypatch.delenv(tuning_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tuning_cache.cache_path() == tmp_path / "mlx_sgemm" / "autotune.json"


def test_the_override_wins(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(tmp_path / "mine.json"))
    assert tuning_cache.cache_path() == tmp_path / "mine.json"


STORE_MANY = """
import sys, time
from pathlib import Path
from mlx_sgemm.dispatch import tuning_cache
from mlx_sgemm.dispatch.problem import plan
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
for i in range(int(sys.argv[3])):
    tuning_cache.store(sys.argv[1], "float32", plan((2**i, 8), (8, 8)), "tile_threads", {"tile_threads": 1.0})
"""


def test_processes_storing_at_once_lose_nothing(monkeypatch, tmp_path):
    """6 processes store 20 entries each into one file, started together."""
    cache, go = tmp_path / "autotune.json", tmp_path / "go"
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(cache))
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", STORE_MANY, f"device{j}", str(go), "20"], env=env)
             for j in range(6)]
    time.sleep(3)  # let every process import and wait at the start line
    go.touch()
    assert all(p.wait(timeout=120) == 0 for p in procs)
    entries = json.loads(cache.read_text())["entries"]
    expected = {tuning_cache.entry_key(f"device{j}", "float32", plan((2**i, 8), (8, 8)))
                for j in range(6) for i in range(20)}
    assert expected - set(entries) == set(), f"{len(expected - set(entries))} entries lost"


def test_a_writer_that_fails_half_way_leaves_the_old_file(fresh, monkeypatch, tmp_path):
    cache = tmp_path / "autotune.json"
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(cache))
    p = plan((4, 8), (8, 8))
    tuning_cache.store("dev", "float32", p, "tile_threads", {})
    before = cache.read_text()

    def broken_dump(*args, **kwargs):
        raise KeyboardInterrupt  # killed while writing

    monkeypatch.setattr(tuning_cache.json, "dump", broken_dump)
    with pytest.raises(KeyboardInterrupt):
        tuning_cache.store("dev", "float32", plan((64, 8), (8, 8)), "tile_async", {})
    assert cache.read_text() == before
    assert [f.name for f in tmp_path.iterdir() if f.suffix == ".tmp"] == []
