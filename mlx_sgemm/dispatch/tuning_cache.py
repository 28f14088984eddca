"""The autotuner's memory: which kernel won, per (device, precision, shape class).

A JSON file, ``autotune.json`` in the user cache directory ``platformdirs``
gives (``$XDG_CACHE_HOME/mlx_sgemm`` or ``~/.cache/mlx_sgemm`` on Linux,
``~/Library/Caches/mlx_sgemm`` on macOS); the environment variable
``MLX_SGEMM_AUTOTUNE_CACHE`` names another file, and is looked at first.

Several processes may use one file at once (a tuning job beside a model that
runs). Each tuning stores its entry under a file lock (``filelock``,
``autotune.json.lock``): it re-reads the file, adds its entry to what is there
(its own entry winning for its key) and replaces the file atomically (a
temporary file beside it, then ``os.replace``), so processes tuning at once
lose nothing and a reader, or a writer killed half-way, never leaves half a
file. A process re-reads the file when it changed since it last read or wrote
it (see :func:`entries` for when that is looked at).

A file that cannot be read or parsed, or is of another version, is treated as
empty, with one warning, and replaced at the next tuning: a corrupt cache costs
a re-tune, never a wrong kernel (an entry only selects among the kernels
``kernel_choice.candidates`` offers for the shape, with a K split of at most one
per 32 of K, and an entry naming none of them is ignored).
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import NamedTuple

import filelock
import platformdirs

from .problem import Plan

CACHE_ENV = "MLX_SGEMM_AUTOTUNE_CACHE"
VERSION = 1  # bump when kernels change enough that old timings mislead
LOCK_TIMEOUT_S = 60  # a store waits this long for another process's, then keeps its entry in memory only


class _Loaded(NamedTuple):
    """The entries in use and where they came from."""

    override: str | None  # the environment's override when the path was worked out
    path: Path
    signature: tuple | None  # the file as it was read or written (see _signature); None: no file
    entries: dict


# None until the first look. Kept because matmul consults the entries for each
# new shape: the path is worked out again only when the override changes
# (_where), the file read again only when its signature changes (entries).
_loaded: _Loaded | None = None
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


def _where() -> tuple[str | None, Path]:
    """(the environment's override, the cache's path). The path is worked out
    again only when the override changes: platformdirs takes ~9 us."""
    override = os.environ.get(CACHE_ENV)
    if _loaded is not None and _loaded.override == override:
        return override, _loaded.path
    return override, cache_path()


def _signature(path: Path) -> tuple | None:
    """What changes whenever another process replaces the file: its inode (each
    replace brings a new file), modification time and size; None if there is none.
    One stat, about a microsecond: cheap enough to look at each time the entries
    are consulted, unlike reading and parsing the file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _read(path: Path, seen: tuple | None = None) -> tuple[tuple | None, dict]:
    """(the file's signature, its entries). A file that cannot be used counts as
    empty, with a warning unless its signature is ``seen``: this process read
    that very file before and warned then."""
    signature = _signature(path)  # before reading: if the file changes in between, it is read again next time

    def unusable(why: str) -> tuple[tuple | None, dict]:
        if signature is None or signature != seen:
            warnings.warn(f"ignoring the autotune cache {path}: {why}", stacklevel=4)
        return signature, {}

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, {}
    except (OSError, ValueError) as e:
        return unusable(str(e))
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
        return unusable(f"not a version {VERSION} cache")
    return signature, {k: v for k, v in data["entries"].items()
                       if isinstance(v, dict) and isinstance(v.get("choice"), str)}


def _use(loaded: _Loaded) -> None:
    global _loaded, _generation
    if _loaded is None or loaded.entries != _loaded.entries:
        _generation += 1
    _loaded = loaded


def entries() -> dict:
    """The cache's entries, read again when the file changed since this process
    last read or wrote it (or the override names another file).

    Looked at here, not in :func:`generation`: matmul consults the entries only
    when it meets a shape pair it has not called before (and the autotuner and
    ``explain`` do), so the stat this costs is paid next to building that
    shape's route, never on a call that repeats one. Another process's tuning
    thus takes effect in this one at its next new shape or its own tuning, and
    from then on for every shape."""
    override, path = _where()
    loaded = _loaded
    same_file = loaded is not None and loaded.path == path
    if same_file and _signature(path) == loaded.signature:
        return loaded.entries
    signature, table = _read(path, loaded.signature if same_file else None)
    _use(_Loaded(override, path, signature, table))
    return table


def generation() -> int:
    """A number that changes whenever the entries in use change: loaded, read
    again or stored.

    matmul asks on every call, so this reads neither the environment (that read
    was ~0.7 us, a quarter of matmul's own Python) nor the file: a new cache
    path, or another process's entries, take effect when :func:`entries` is
    next consulted."""
    return _generation


def lookup(device_name: str, precision: str, p: Plan) -> str | None:
    """The winning launch's key for this shape's class, if it was tuned."""
    entry = entries().get(entry_key(device_name, precision, p))
    return entry["choice"] if entry else None


def store(device_name: str, precision: str, p: Plan, choice: str, seconds: dict[str, float]) -> None:
    """Remember ``choice`` (and every candidate's time) for this shape's class:
    under the file's lock, the file as it is now plus this entry replaces it (see
    the module's docstring). If the file cannot be written the entry is kept in
    this process, with a warning, until the file changes."""
    entry = {"choice": choice, "shape": [p.M, p.N, p.K, p.batch], "seconds": seconds}
    key = entry_key(device_name, precision, p)
    override, path = _where()
    seen = _loaded.signature if _loaded is not None and _loaded.path == path else None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(f"{path}.lock", timeout=LOCK_TIMEOUT_S):
            # Read again under the lock whatever the signature says: another
            # process may have stored since this one read, and a signature can
            # repeat (a freed inode reused, a coarse clock, the same size), which
            # here would lose that process's entry. A store is rare; a read is cheap.
            _, on_disk = _read(path, seen)
            table = {**on_disk, key: entry}
            _write_atomically(path, table)
            signature = _signature(path)  # still ours: the lock is held
    except (OSError, filelock.Timeout) as e:
        warnings.warn(f"could not write the autotune cache {path}: {e}", stacklevel=2)
        table = {**entries(), key: entry}
        signature = _loaded.signature
    _use(_Loaded(override, path, signature, table))


def _write_atomically(path: Path, table: dict) -> None:
    """Write to a temporary file beside ``path``, synced to disk, then rename it
    over ``path``: a reader, a writer killed half-way or a machine that goes down
    leaves the old file or the new one, and no temporary file if Python lives to
    clean up."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False) as f:
        temporary = f.name
        try:
            json.dump({"version": VERSION, "entries": table}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        except BaseException:
            f.close()
            os.unlink(temporary)
            raise
    try:
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
