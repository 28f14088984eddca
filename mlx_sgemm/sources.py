"""Find and read the kernel sources under ``kernels/<backend>/``.

In a source checkout (or an editable install) the sources sit in ``kernels/`` at the
top of the repository; an installed wheel carries them as ``mlx_sgemm/kernels/``
(see ``pyproject.toml``). Both are looked for, the wheel's copy first.
"""

from __future__ import annotations

import functools
import hashlib
import re
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


def path(backend: str, filename: str) -> Path:
    return kernels_dir() / backend / filename


@functools.cache
def read(backend: str, filename: str) -> str:
    """The text of ``kernels/<backend>/<filename>``."""
    return path(backend, filename).read_text()


def include(backend: str, filename: str) -> str:
    """What stands in the source handed to MLX for ``kernels/<backend>/<filename>``.

    On CUDA, an ``#include`` of the file by its absolute path: NVRTC reads it
    from disk when it compiles. MLX builds the full kernel source from our
    strings on every call and hashes it when it evaluates the call, so their
    length is a per-call cost: on an H200's host the bare small_m kernel took
    16.3 us a call with its 26 KB of header and body inlined, 8.5 included
    (benchmarks/NOTES.md).
    Compile errors then name the real file and line. On Metal (whose kernels
    MLX compiles from the string alone), and for a path an include directive
    cannot spell, the text itself, without comments.
    """
    where = str(path(backend, filename))
    if backend == "cuda" and not any(c in where for c in '"\\\n'):
        return f'#include "{where}"\n'
    return for_compiler(read(backend, filename))


@functools.cache
def digest(backend: str, *filenames: str, extra: str = "") -> str:
    """A short hash of the files' contents (and of ``extra``). Kernels that
    include their files carry it in their name: MLX keeps compiled CUDA kernels
    on disk under the kernel's name and source, and an edited file must not
    find the old build."""
    h = hashlib.sha256()
    for filename in filenames:
        h.update(read(backend, filename).encode())
    h.update(extra.encode())
    return h.hexdigest()[:12]


# String and character literals (kept as they are) and comments (dropped).
_LITERALS_AND_COMMENTS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def for_compiler(text: str) -> str:
    """``text`` without comments, indentation and blank lines.

    MLX hashes the whole kernel source on every call of a custom kernel (and
    on CUDA builds it anew), so its length is a per-call cost that small
    products feel: measured on an H200, 45 KB -> 26 KB saved ~4 us a call
    (benchmarks/NOTES.md); CUDA kernels now include their files instead
    (:func:`include`). The files under kernels/ keep their comments; a Metal
    compile error's line numbers refer to this text.
    """
    def keep_literals(m: re.Match) -> str:
        token = m.group(0)
        return token if token[0] in "\"'" else ("" if token.startswith("//") else " ")

    lines = (line.strip() for line in _LITERALS_AND_COMMENTS.sub(keep_literals, text).splitlines())
    return "\n".join(line for line in lines if line) + "\n"


def header(backend: str) -> str:
    return read(backend, HEADERS[backend])
