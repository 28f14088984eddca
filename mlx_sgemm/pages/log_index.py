"""docs/performance-log.md's topic index: its dated sections grouped by
topic, each a link, so that a reader looking for one kernel or question finds
every entry on it. Written from the log's own headings, so a new entry is
indexed (under "Method, baselines and results" when no topic's words match)."""

from __future__ import annotations

import re
from pathlib import Path

LOG = Path(__file__).resolve().parent.parent.parent / "docs" / "performance-log.md"
# (topic, words of a heading that put it there): the first topic whose word a
# heading holds takes it.
TOPICS = (
    ("The emulations: the float16 split and INT8", ("float16 split", "INT8", "moduli", "The products")),
    ("Half-precision operands and deterministic=True", ("bfloat16", "Half operands", "half products")),
    ("Metal (CPU harness only)", ("Metal",)),
    ("Method, baselines and results", ("Results", "Targets", "benchmark's method", "Ceilings and baselines",
                                       "stages, first measured", "idle", "layout change", "Two GPUs",
                                       "Per-call", "cluster problem")),
    ("Few rows, split-K, unaligned shapes, the autotuner", ("small_m", "Split-K", "Short C", "14336",
                                                            "1x4096x4096", "One product at a time", "autotune")),
    ("3xTF32 accuracy", ("3xTF32",)),
    ("The FMA and mma.sync stages (tile_threads, tile_simdgroup, tile_async)",
     ("tile_threads", "tile_simdgroup", "tile_async", "mma.sync", "Tile copies", "Main loops")),
    ("The wgmma pipeline (tile_wgmma), float32 and TF32", ("tile_wgmma", "TF32", "wgmma", "TMA")),
)
DEFAULT = TOPICS[3][0]
_SECTION = re.compile(r"^## (\d{4}-\d{2}-\d{2}) — (.+)$", re.MULTILINE)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def topic(title: str) -> str:
    return next((name for name, words in TOPICS if any(w in title for w in words)), DEFAULT)


def index(path: Path = LOG) -> str:
    """A list per topic of its sections, oldest first, as links."""
    grouped: dict[str, list[str]] = {name: [] for name, _ in TOPICS}
    for date, title in _SECTION.findall(path.read_text()):
        grouped[topic(title)].append(f"[{title}](#{anchor(f'{date} — {title}')}) ({date})")
    return "\n".join(f"- **{name}**: " + "; ".join(links) for name, links in grouped.items() if links)
