"""The autotuner's memory: which kernel won, per (device, precision, shape class).

A JSON file, ``autotune.json`` in the user cache directory ``platformdirs``
gives (``$XDG_CACHE_HOME/mlx_sgemm`` or ``~/.cache/mlx_sgemm`` on Linux,
``~/Library/Caches/mlx_sgemm`` on macOS); the environment variable
``MLX_SGEMM_AUTOTUNE_CACHE`` names another. It is read once per process (again
when the path changes: see :func:`generation` for when that is noticed). Each
tuning stores its entry under a file lock (``filelock``, ``autotune.json.lock``):
it re-reads the file, adds its entry to what is there (another process may have
stored entries since this one read it) and replaces the file atomically, so
processes tuning at once lose nothing and a reader never sees half a file.
A file that cannot be read or parsed is treated as empty, with a warning, and
replaced at the next tuning: a corrupt cache costs a re-tune, never a wrong
kernel (an entry only selects among the kernels ``kernel_choice.candidates`` offers
for the shape, with a K split of at most one per 32 of K, and an entry naming
none of them is ignored).
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path

import filelock
import platformdirs

from .problem import Plan

CACHE_ENV = "MLX_SGEMM_AUTOTUNE_CACHE"
VERSION = 1  # bump when kernels change enough that old timings mislead

# (the environment's override when loaded, the entries): matmul asks on every
# call, so the file is read once and the path rebuilt only when the override
# changes.
_loaded: tuple[str | None, dict] | None = None
# Bumped whenever the entries in use change (loaded, reloaded or stored): what
# matmul has worked out per shape is keyed by it (mlx_sgemm/ops.py, _route).
_generation = 0


def cache_path() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir("mlx_sgemm")) / "autotune.json"


def _bucket(n: int) -> int:
    """The power of two at or above n: products within a factor of 2 share a class."""
    return 1 << max(0, (n - 1).bit_length())


def shape_class(p: Plan) -> str:
    return f"M{_bucket(p.M)}-N{_bucket(p.N)}-K{_bucket(p.K)}-B{_bucket(p.batch)}"


def entry_key(device_name: str, precision: str, p: Plan) -> str:
    return f"{device_name}|{precision}|{shape_class(p)}"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        warnings.warn(f"ignoring the autotune cache {path}: {e}", stacklevel=3)
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
        warnings.warn(f"ignoring the autotune cache {path}: not a version {VERSION} cache", stacklevel=3)
        return {}
    return {k: v for k, v in data["entries"].items() if isinstance(v, dict) and isinstance(v.get("choice"), str)}


def entries() -> dict:
    """The cache's entries (loaded once per path)."""
    global _loaded, _generation
    override = os.environ.get(CACHE_ENV)
    if _loaded is None or _loaded[0] != override:
        _loaded = (override, _read(cache_path()))
        _generation += 1
    return _loaded[1]


def generation() -> int:
    """A number that changes whenever the entries in use change: loaded, reloaded
    (:func:`entries` found the path changed) or stored.

    matmul asks on every call, so this reads no environment (that read was
    ~0.7 us, a quarter of matmul's own Python): a new cache path takes effect
    when :func:`entries` is next consulted, which is at the first call of a
    shape pair not called before (and by the autotuner), and from then on for
    every shape."""
    return _generation


def lookup(device_name: str, precision: str, p: Plan) -> str | None:
    """The winning launch's key for this shape's class, if it was tuned."""
    entry = entries().get(entry_key(device_name, precision, p))
    return entry["choice"] if entry else None


def store(device_name: str, precision: str, p: Plan, choice: str, seconds: dict[str, float]) -> None:
    """Remember ``choice`` (and every candidate's time) for this shape's class,
    merged into what the file holds now (see the module's docstring)."""
    entry = {"choice": choice, "shape": [p.M, p.N, p.K, p.batch], "seconds": seconds}
    key = entry_key(device_name, precision, p)
    path = cache_path()
    table = {**entries(), key: entry}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(f"{path}.lock", timeout=60):
            table = {**entries(), **_read(path), key: entry}
            _write_atomically(path, table)
    except (OSError, filelock.Timeout) as e:
        warnings.warn(f"could not write the autotune cache {path}: {e}", stacklevel=2)
    global _loaded, _generation
    _loaded = (os.environ.get(CACHE_ENV), table)
    _generation += 1


def _write_atomically(path: Path, table: dict) -> None:
    """Write to a temporary file beside ``path``, then rename it over ``path``:
    a reader (or a writer killed half-way) leaves the old file or the new one."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as f:
        try:
            json.dump({"version": VERSION, "entries": table}, f, indent=1)
        except BaseException:
            f.close()
            os.unlink(f.name)
            raise
    os.replace(f.name, path)
