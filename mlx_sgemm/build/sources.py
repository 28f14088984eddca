"""Find and read the kernel sources under ``kernels/<backend>/``, and resolve
their includes.

In a source checkout (or an editable install) the sources sit in ``kernels/`` at the
top of the repository; an installed wheel carries them as ``mlx_sgemm/kernels/``
(see ``pyproject.toml``). Both are looked for, the wheel's copy first.

A stage file (``kernels/cuda/tile.cu``, ``kernels/metal/tile.metal``) is a
kernel body that names the headers it uses with ``#include "sgemm/..."`` lines;
each header names its own. ``mx.fast.metal_kernel`` / ``mx.fast.cuda_kernel``
take a body and one header string, so the body is handed over without its
include lines and the header string is made from them: on CUDA, the same
includes by absolute path (NVRTC reads the files, and the headers' own
includes, from disk); on Metal, the headers' text, each file once, dependencies
first (MLX compiles Metal from the string alone).
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # mlx_sgemm/
_CANDIDATES = (_PACKAGE_DIR / "kernels", _PACKAGE_DIR.parent / "kernels")

# A file every backend's folder has: how a kernels folder is recognised.
_MARKER = {"metal": "naive.metal", "cuda": "naive.cu"}

# `#include "file"` on a line of its own (a trailing comment allowed); angle
# includes (<metal_stdlib>) are the compiler's and stay where they are.
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"\n]+)"[ \t]*(?://[^\n]*)?\n?', re.M)


@functools.cache
def kernels_dir() -> Path:
    for candidate in _CANDIDATES:
        if all((candidate / b / f).is_file() for b, f in _MARKER.items()):
            return candidate
    raise FileNotFoundError(
        "mlx_sgemm kernel sources not found; looked in "
        + ", ".join(str(c) for c in _CANDIDATES)
    )


def path(backend: str, filename: str) -> Path:
    return kernels_dir() / backend / filename


@functools.cache
def read(backend: str, filename: str) -> str:
    """The text of ``kernels/<backend>/<filename>`` as written."""
    return path(backend, filename).read_text()


def includes(backend: str, filename: str) -> tuple[str, ...]:
    """The files ``filename`` includes with ``#include "..."``, as paths under
    ``kernels/<backend>/`` (an include is relative to the including file's folder)."""
    folder = posixpath.dirname(filename)
    return tuple(
        posixpath.normpath(posixpath.join(folder, name))
        for name in _INCLUDE.findall(read(backend, filename))
    )


def without_includes(text: str) -> str:
    """``text`` with its ``#include "..."`` lines taken out."""
    return _INCLUDE.sub("", text)


@functools.cache
def closure(backend: str, *filenames: str) -> tuple[str, ...]:
    """Every file the given files include, directly or not, each once, a file
    after the files it includes (the order a compiler would meet them in)."""
    order: list[str] = []

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in stack:
            raise ValueError(f"kernels/{backend}: include cycle {' -> '.join(stack + (name,))}")
        for dependency in includes(backend, name):
            visit(dependency, stack + (name,))
        order.append(name)

    for filename in filenames:
        for dependency in includes(backend, filename):
            visit(dependency, (filename,))
    return tuple(order)


def body(backend: str, filename: str) -> str:
    """A stage file as MLX takes it: the kernel body without its include lines."""
    return without_includes(read(backend, filename))


def headers_text(backend: str, filename: str) -> str:
    """The text of every header the stage file ``filename`` uses, each once,
    dependencies first: what stands in for its include lines where the text
    itself must be handed over (Metal, the CPU harness)."""
    return "".join(without_includes(read(backend, h)) for h in closure(backend, filename))


def include(backend: str, filename: str) -> str:
    """What stands in the source handed to MLX for ``kernels/<backend>/<filename>``.

    On CUDA, an ``#include`` of the file by its absolute path: NVRTC reads it
    from disk when it compiles. MLX builds the full kernel source from our
    strings on every call and hashes it when it evaluates the call, so their
    length is a per-call cost (docs/performance-log.md, "Per-call cost").
    Compile errors then name the real file and line. On Metal (whose kernels
    MLX compiles from the string alone), and for a path an include directive
    cannot spell, the text itself, without comments.
    """
    where = str(path(backend, filename))
    if backend == "cuda" and not any(c in where for c in '"\\\n'):
        return f'#include "{where}"\n'
    return for_compiler(without_includes(read(backend, filename)))


def compiled_lines(text: str) -> list[int]:
    """For each line of ``for_compiler(text)``, the line of ``text`` it comes
    from (where its first character was): what a diagnostic or a checker's
    finding about the compiled text names, in the file as written."""
    pieces, origins, pos = [], [], 0
    for m in _LITERALS_AND_COMMENTS.finditer(text):
        pieces.append(text[pos:m.start()])
        origins.extend(range(pos, m.start()))
        token = m.group(0)
        kept = token if token[0] in "\"'" else ("" if token.startswith("//") else " ")
        pieces.append(kept)
        origins.extend(range(m.start(), m.start() + len(kept)))
        pos = m.end()
    pieces.append(text[pos:])
    origins.extend(range(pos, len(text)))
    joined = "".join(pieces)
    lines, start = [], 0
    for line in joined.split("\n"):
        stripped = line.strip()
        if stripped:
            first = start + line.index(stripped[0])
            lines.append(text.count("\n", 0, origins[first]) + 1)
        start += len(line) + 1
    return lines


def compiled_origins(backend: str, filename: str, prefix: str = "") -> tuple[
        tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
    """Where each line of a Metal stage's compiled header (``prefix``, then the
    headers :func:`headers_text` joins) and compiled body comes from:
    (``kernels/metal/<file>``, line). Include lines are blanked rather than
    taken out, which changes no compiled line and keeps the numbering."""
    def blank_includes(text: str) -> str:
        return _INCLUDE.sub(lambda m: "\n" * m.group(0).count("\n"), text)

    def origins(name: str) -> list[tuple[str, int]]:
        where = f"kernels/{backend}/{name}"
        return [(where, n) for n in compiled_lines(blank_includes(read(backend, name)))]

    header = [("(the stage's macros)", n) for n in compiled_lines(prefix)] if prefix else []
    for name in closure(backend, filename):
        header += origins(name)
    return tuple(header), tuple(origins(filename))


@functools.cache
def digest(backend: str, *filenames: str, extra: str = "") -> str:
    """A short hash of the files' contents, of every file they include (and of
    ``extra``). Kernels that include their files carry it in their name: MLX
    keeps compiled CUDA kernels on disk under the kernel's name and source, and
    an edited file must not find the old build."""
    h = hashlib.sha256()
    for filename in closure(backend, *filenames) + filenames:
        h.update(filename.encode())
        h.update(read(backend, filename).encode())
    h.update(extra.encode())
    return h.hexdigest()[:12]


# String and character literals (kept as they are) and comments (dropped).
_LITERALS_AND_COMMENTS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def for_compiler(text: str) -> str:
    """``text`` without comments, indentation and blank lines.

    MLX hashes the whole kernel source on every call of a custom kernel (and
    on CUDA builds it anew), so its length is a per-call cost that small
    products feel (docs/performance-log.md, "Per-call cost"); CUDA kernels
    include their files instead (:func:`include`). The files under kernels/
    keep their comments; a Metal compile error's line numbers refer to this text.
    """
    def keep_literals(m: re.Match) -> str:
        token = m.group(0)
        return token if token[0] in "\"'" else ("" if token.startswith("//") else " ")

    lines = (line.strip() for line in _LITERALS_AND_COMMENTS.sub(keep_literals, text).splitlines())
    return "\n".join(line for line in lines if line) + "\n"
