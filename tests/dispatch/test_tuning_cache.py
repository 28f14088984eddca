"""Where the autotune cache lives, and how processes share it: stores at once
lose nothing, a writer that dies leaves the old file, a reader sees what others
stored without reading the file on every look."""

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from mlx_sgemm.dispatch import tuning_cache
from mlx_sgemm.dispatch.problem import plan

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch):
    """Nothing loaded yet (monkeypatch puts back what other tests loaded)."""
    monkeypatch.setattr(tuning_cache, "_loaded", None)


@pytest.fixture
def cache(fresh, monkeypatch, tmp_path):
    path = tmp_path / "autotune.json"
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(path))
    return path


def shape(i: int):
    """The i-th of distinct shape classes."""
    return plan((2**i, 8), (8, 8))


def key(device_name: str, i: int) -> str:
    return tuning_cache.entry_key(device_name, "float32", shape(i))


# Another process storing entries: says it is ready (imports done), waits for
# the go file, then stores `count` entries for its device name.
STORE = """
import sys, time
from pathlib import Path
from mlx_sgemm.dispatch import tuning_cache
from mlx_sgemm.dispatch.problem import plan
device_name, count, ready, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
ready.touch()
while not go.exists():
    time.sleep(0.001)
for i in range(count):
    tuning_cache.store(device_name, "float32", plan((2**i, 8), (8, 8)), f"choice{i}", {f"choice{i}": 1.0})
"""


def python(script: str, *args: str) -> subprocess.Popen:
    """Another Python process running ``script``, with this checkout's package
    (and this test's cache override, inherited)."""
    return subprocess.Popen([sys.executable, "-c", script, *args], env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})


def start_storing(device_name: str, count: int, ready: Path, go: Path) -> subprocess.Popen:
    return python(STORE, device_name, str(count), str(ready), str(go))


def store_in_another_process(device_name: str, count: int, tmp_path: Path) -> None:
    go = tmp_path / "go"
    go.touch()
    assert start_storing(device_name, count, tmp_path / f"ready-{device_name}", go).wait(timeout=60) == 0


def test_xdg_cache_home_is_honoured(fresh, monkeypatch, tmp_path):
    if sys.platform != "linux":
        pytest.skip("XDG_CACHE_HOME is the Linux convention")
    monkeypatch.delenv(tuning_cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tuning_cache.cache_path() == tmp_path / "mlx_sgemm" / "autotune.json"
    tuning_cache.store("dev", "float32", shape(1), "tile_threads", {})
    assert key("dev", 1) in json.loads((tmp_path / "mlx_sgemm" / "autotune.json").read_text())["entries"]


def test_the_override_wins(fresh, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(tmp_path / "mine.json"))
    assert tuning_cache.cache_path() == tmp_path / "mine.json"
    tuning_cache.store("dev", "float32", shape(1), "tile_threads", {})
    assert (tmp_path / "mine.json").exists() and not (tmp_path / "xdg").exists()


def test_processes_storing_at_once_lose_nothing(cache, tmp_path):
    """6 processes store 20 entries each into one file, started together."""
    processes, count, go = 6, 20, tmp_path / "go"
    ready = [tmp_path / f"ready{j}" for j in range(processes)]
    procs = [start_storing(f"device{j}", count, ready[j], go) for j in range(processes)]
    try:
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in ready):  # every process imported and waiting
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a process did not start"
            time.sleep(0.01)
        go.touch()
        codes = [p.wait(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert codes == [0] * processes
    data = json.loads(cache.read_text())
    assert data["version"] == tuning_cache.VERSION
    expected = {key(f"device{j}", i) for j in range(processes) for i in range(count)}
    assert expected - set(data["entries"]) == set(), f"{len(expected - set(data['entries']))} entries lost"
    assert len(data["entries"]) == processes * count


def test_own_entry_wins_and_the_others_stay(cache, tmp_path):
    store_in_another_process("dev", 2, tmp_path)  # choice0, choice1
    tuning_cache.store("dev", "float32", shape(1), "mine", {})
    on_disk = json.loads(cache.read_text())["entries"]
    assert {k: v["choice"] for k, v in on_disk.items()} == {key("dev", 0): "choice0", key("dev", 1): "mine"}


def test_a_store_merges_into_the_file_not_into_what_this_process_once_read(cache):
    tuning_cache.store("dev", "float32", shape(0), "old", {})
    cache.unlink()  # the user clears the cache
    tuning_cache.store("dev", "float32", shape(1), "new", {})
    assert list(json.loads(cache.read_text())["entries"]) == [key("dev", 1)]


def test_entries_another_process_stored_are_seen(cache, tmp_path):
    tuning_cache.store("here", "float32", shape(0), "mine", {})
    assert tuning_cache.lookup("there", "float32", shape(0)) is None
    before = tuning_cache.generation()
    store_in_another_process("there", 1, tmp_path)
    assert tuning_cache.lookup("there", "float32", shape(0)) == "choice0"
    assert tuning_cache.lookup("here", "float32", shape(0)) == "mine"
    assert tuning_cache.generation() != before  # what matmul worked out per shape is redone


def test_an_unchanged_file_is_not_read_again(cache, monkeypatch):
    tuning_cache.store("dev", "float32", shape(0), "mine", {})
    reads = []
    read = tuning_cache._read
    monkeypatch.setattr(tuning_cache, "_read", lambda *args: reads.append(args) or read(*args))
    before = tuning_cache.generation()
    for _ in range(100):
        assert tuning_cache.lookup("dev", "float32", shape(0)) == "mine"
    assert reads == [] and tuning_cache.generation() == before
    cache.write_text(cache.read_text().replace('"mine"', '"edited"'))
    assert tuning_cache.lookup("dev", "float32", shape(0)) == "edited"
    assert len(reads) == 1


def test_a_corrupt_file_warns_once_then_is_replaced(cache):
    cache.write_text("{not json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert tuning_cache.entries() == {}
        assert tuning_cache.entries() == {}
        tuning_cache.store("dev", "float32", shape(0), "mine", {})
    assert [str(w.message).startswith(f"ignoring the autotune cache {cache}: ") for w in caught] == [True]
    assert json.loads(cache.read_text())["entries"][key("dev", 0)]["choice"] == "mine"


def test_an_entry_that_cannot_be_written_is_kept_in_this_process(cache, monkeypatch):
    def no_room(path, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tuning_cache, "_write_atomically", no_room)
    with pytest.warns(UserWarning, match="could not write the autotune cache"):
        tuning_cache.store("dev", "float32", shape(0), "mine", {})
    assert tuning_cache.lookup("dev", "float32", shape(0)) == "mine"
    assert not cache.exists()


@pytest.mark.parametrize("fails", ["json.dump", "os.replace"])
def test_a_writer_that_fails_half_way_leaves_the_old_file(cache, monkeypatch, tmp_path, fails):
    tuning_cache.store("dev", "float32", shape(0), "tile_threads", {})
    before = cache.read_text()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    module, name = fails.split(".")
    monkeypatch.setattr(getattr(tuning_cache, module), name, interrupted)
    with pytest.raises(KeyboardInterrupt):
        tuning_cache.store("dev", "float32", shape(1), "tile_async", {})
    assert cache.read_text() == before
    assert [f.name for f in tmp_path.iterdir() if f.suffix == ".tmp"] == []


DIE_WHILE_WRITING = """
import json, os, sys
from mlx_sgemm.dispatch import tuning_cache
from mlx_sgemm.dispatch.problem import plan
def dies_half_way(obj, f, **kwargs):
    text = json.dumps(obj)
    f.write(text[: len(text) // 2])
    f.flush()
    os._exit(9)  # no clean-up, no lock release, like a kill
tuning_cache.json.dump = dies_half_way
tuning_cache.store("dev", "float32", plan((64, 8), (8, 8)), "tile_async", {})
"""


def test_a_killed_writer_leaves_the_old_file_and_the_lock_free(cache, monkeypatch):
    tuning_cache.store("dev", "float32", shape(0), "tile_threads", {})
    before = cache.read_text()
    assert python(DIE_WHILE_WRITING).wait(timeout=60) == 9
    assert cache.read_text() == before
    monkeypatch.setattr(tuning_cache, "LOCK_TIMEOUT_S", 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a lock still held would warn here
        tuning_cache.store("dev", "float32", shape(1), "tile_async", {})
    assert set(json.loads(cache.read_text())["entries"]) == {key("dev", 0), key("dev", 1)}
