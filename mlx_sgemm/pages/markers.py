"""The generated parts of a text: ``<!-- generated:NAME -->`` ... ``<!-- /generated -->``.

A part is a block when its markers stand on lines of their own (the content
then sits on the lines between) or a span inside a line (a figure in a
sentence). Markdown renders neither marker: GitHub and Jupyter hide HTML
comments.
"""

from __future__ import annotations

import re
from collections.abc import Callable

PART = re.compile(r"<!-- generated:([a-z0-9-]+) -->(.*?)<!-- /generated -->", re.DOTALL)


def names(text: str) -> list[str]:
    """The names of the generated parts of ``text``, in order."""
    return [m.group(1) for m in PART.finditer(text)]


def fill(text: str, blocks: dict[str, Callable[[], str]], where: str = "the text") -> str:
    """``text`` with each generated part's content replaced by what its block
    writes. Raises KeyError for a part no block writes, so that a misspelt
    marker cannot go stale unnoticed."""
    unknown = sorted(set(names(text)) - set(blocks))
    if unknown:
        raise KeyError(f"{where}: no block writes the generated parts {unknown}; blocks: {sorted(blocks)}")

    def replace(found: re.Match) -> str:
        name, old = found.group(1), found.group(2)
        new = blocks[name]().strip("\n")
        if old.startswith("\n"):  # a block: its content on lines of its own
            new = f"\n{new}\n"
        return f"<!-- generated:{name} -->{new}<!-- /generated -->"

    return PART.sub(replace, text)
