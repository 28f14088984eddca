"""Find and read the kernel sources under ``kernels/<backend>/``.

In a source checkout (or an editable install) the sources sit in ``kernels/`` at the
top of the repository; an installed wheel carries them as ``mlx_sgemm/kernels/``
(see ``pyproject.toml``). Both are looked for, the wheel's copy first.
"""

from __future__ import annotations

import functools
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_CANDIDATES = (_PACKAGE_DIR / "kernels", _PACKAGE_DIR.parent / "kernels")

# The one shared header of each backend, handed to MLX as ``header=``.
HEADERS = {"metal": "sgemm.h", "cuda": "sgemm.cuh"}


@functools.cache
def kernels_dir() -> Path:
    for candidate in _CANDIDATES:
        if (candidate / "cuda" / HEADERS["cuda"]).is_file():
            return candidate
    raise FileNotFoundError(
        "mlx_sgemm kernel sources not found; looked in "
        + ", ".join(str(c) for c in _CANDIDATES)
    )


@functools.cache
def read(backend: str, filename: str) -> str:
    """The text of ``kernels/<backend>/<filename>``."""
    return (kernels_dir() / backend / filename).read_text()


def header(backend: str) -> str:
    return read(backend, HEADERS[backend])
