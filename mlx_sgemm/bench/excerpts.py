"""Lines of the kernel sources (and of the package), found by pattern, to show
next to what they measure: the notebook's chapters quote their kernels this
way, read when the notebook runs, so a quote is never an old copy.

``excerpt("kernels/cuda/naive.cu", r"const int row =")`` is the lines from the
one line matching the pattern to the end of the brace block that begins there
(or at the first brace after it); ``end=`` a pattern instead ends at the first
line matching it. A pattern that matches no line, or more than one start line,
raises LookupError: an edit of the kernel that moves the quoted code fails the
notebook's run rather than quoting something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..build import sources

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # mlx_sgemm/
_LANGUAGE = {".cu": "cuda", ".cuh": "cuda", ".metal": "cpp", ".h": "cpp", ".py": "python"}


@dataclass(frozen=True)
class Excerpt:
    path: str  # as asked: "kernels/cuda/naive.cu", "mlx_sgemm/dispatch/kernel_choice.py"
    first: int  # 1-based line numbers, inclusive
    last: int
    text: str

    def _repr_markdown_(self) -> str:
        language = _LANGUAGE.get(Path(self.path).suffix, "")
        return f"`{self.path}`, lines {self.first}-{self.last}:\n\n```{language}\n{self.text}\n```"

    def __str__(self) -> str:
        return f"{self.path}, lines {self.first}-{self.last}:\n{self.text}"


def resolve(path: str) -> Path:
    """The file of ``kernels/...`` (wherever :mod:`mlx_sgemm.build.sources`
    finds the kernels: the checkout or the installed package) or ``mlx_sgemm/...``."""
    head, _, rest = path.partition("/")
    if head == "kernels":
        return sources.kernels_dir() / rest
    if head == "mlx_sgemm":
        return _PACKAGE_DIR / rest
    raise ValueError(f"an excerpt is of kernels/... or mlx_sgemm/..., got {path!r}")


def _braces(line: str) -> int:
    """Opening minus closing braces, outside // comments and string literals."""
    code = re.sub(r'"(?:\\.|[^"\\])*"', "", line.split("//", 1)[0])
    return code.count("{") - code.count("}")


def excerpt(path: str, start: str, end: str | None = None) -> Excerpt:
    """The lines of ``path`` from the one line matching the regular expression
    ``start`` through the line matching ``end`` (the first at or after the
    start), or, without ``end``, through the line that closes the first brace
    block opened from the start line on."""
    lines = resolve(path).read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if re.search(start, line)]
    if len(starts) != 1:
        found = "no line" if not starts else f"lines {', '.join(str(i + 1) for i in starts)}"
        raise LookupError(f"{path}: the start pattern {start!r} matches {found}; it must match one")
    first = last = starts[0]
    if end is not None:
        ends = [i for i in range(first, len(lines)) if re.search(end, lines[i])]
        if not ends:
            raise LookupError(f"{path}: the end pattern {end!r} matches no line from line {first + 1} on")
        last = ends[0]
    else:
        depth, opened = 0, False
        for last in range(first, len(lines)):
            depth += _braces(lines[last])
            opened = opened or depth > 0
            if opened and depth <= 0:
                break
        else:
            raise LookupError(f"{path}: no brace block closes after line {first + 1}")
    return Excerpt(path, first + 1, last + 1, "\n".join(lines[first:last + 1]))
