"""The pages a user reads agree with the code and the recorded runs: their
generated parts are what scripts/generate_pages.py writes now, and the
README's rules of form hold (length, no install from an index, no lab-log
phrasing)."""

import re
from pathlib import Path

import pytest

from mlx_sgemm.pages import documents, markers

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
# Phrases of a lab log, not of a product page: time relative to the writer's day.
LAB_LOG = ("the day before", "the last changes", "predates", "before the split", "was made cheaper",
           "the run before", "session ", "issue 39", "seed 00")


def test_every_generated_part_is_current():
    stale = documents.stale(ROOT)
    assert not stale, f"{stale} differ from what the code writes: run python scripts/generate_pages.py"


@pytest.mark.parametrize("page", list(documents.PAGES))
def test_each_page_has_a_part_for_every_block_it_lists(page):
    """A block a page lists but no longer marks would never be written."""
    text = (ROOT / page).read_text()
    assert set(markers.names(text.replace("\\n", "\n"))) == set(documents.PAGES[page])


def test_the_readme_is_a_page_not_a_log():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    lowered = text.lower()
    assert not [p for p in LAB_LOG if p in lowered]
    assert not re.search(r"pip install (-U )?mlx-sgemm", text), "the package is on no index yet"


def test_the_docs_speak_no_lab_log():
    for page in ("docs/current-figures.md", "docs/glossary.md"):
        lowered = (ROOT / page).read_text().lower()
        assert not [p for p in LAB_LOG if p in lowered], page


def test_a_part_is_filled_as_a_block_or_a_span():
    text = "a <!-- generated:x -->old<!-- /generated --> b\n<!-- generated:y -->\nold\n<!-- /generated -->\n"
    filled = markers.fill(text, {"x": lambda: "1.5x", "y": lambda: "| t |\n"})
    assert filled == "a <!-- generated:x -->1.5x<!-- /generated --> b\n<!-- generated:y -->\n| t |\n<!-- /generated -->\n"
    assert markers.fill(filled, {"x": lambda: "1.5x", "y": lambda: "| t |"}) == filled


def test_a_part_no_block_writes_is_an_error():
    with pytest.raises(KeyError, match="typo"):
        markers.fill("<!-- generated:typo --><!-- /generated -->", {"x": lambda: ""}, "README.md")


def test_the_log_index_links_every_dated_entry_once():
    from mlx_sgemm.pages import log_index

    text = log_index.LOG.read_text()
    headings = re.findall(r"^## (\d{4}-\d{2}-\d{2} — .+)$", text, re.MULTILINE)
    index = log_index.index()
    assert headings and all(index.count(f"(#{log_index.anchor(h)})") == 1 for h in headings)
    assert log_index.anchor("2026-11-22 — 1x4096x4096 x @ W.T: even kernels") == "2026-11-22--1x4096x4096-x--wt-even-kernels"
