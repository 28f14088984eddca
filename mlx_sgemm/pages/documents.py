"""The pages with generated parts, and the block that writes each part
(:mod:`.markers`). To add a part: a function returning its text, an entry
here, and the markers in the page."""

from __future__ import annotations

import json
from pathlib import Path

from . import (dispatch_table, emulation_phases, half_precision, install_sizes, log_index, markers, models_table,
               notebook_spans, recorded_summaries, sweep_tables)

ROOT = Path(__file__).resolve().parent.parent.parent

README = {
    "headline": sweep_tables.headline,
    "install-sizes": install_sizes.block,
    "dispatch": dispatch_table.table,
    "explain": dispatch_table.explain_sample,
    "results": sweep_tables.results_table,
    "models": models_table.block,
}
CURRENT_FIGURES = {
    "sweep": sweep_tables.every_size,
    "dispatch": dispatch_table.table,
    "shape-suites": recorded_summaries.shape_suites,
    "crossovers-float32": lambda: recorded_summaries.crossovers("emulation-crossover-*.csv", "x_cublas_sgemm"),
    "crossovers-tf32": lambda: recorded_summaries.crossovers("tf32-crossover-*.csv", "x_cublas_tf32"),
    "models": models_table.block,
}
JOURNEY = {
    "sweep": lambda: sweep_tables.every_size(("float32",)),  # the journey's stages are float32 SGEMMs
    "matmul-runs": notebook_spans.matmul_runs,
    "dispatch": dispatch_table.table,
    "fp16-phases": emulation_phases.phase_table,
    "half-suite": half_precision.suite_table,
    "half-bandwidth": half_precision.weight_bandwidth,
    "half-gemv-kernel": half_precision.gemv_kernel_table,
    "half-kernel-times": half_precision.kernel_times_table,
    "models": models_table.block,
}
NOTEBOOK = {
    "headline": notebook_spans.headline,
    "tile-simdgroup": notebook_spans.tile_simdgroup,
    "tile-simdgroup-pct": notebook_spans.pct_of_units("tile_simdgroup"),
    "tile-async": notebook_spans.tile_async,
    "tile-async-pct": notebook_spans.pct_of_units("tile_async"),
    "matmul-runs": notebook_spans.matmul_runs,
    "matmul-ceiling": notebook_spans.matmul_ceiling,
}
# Page (relative to the repository) -> its blocks.
PAGES = {
    "README.md": README,
    "docs/current-figures.md": CURRENT_FIGURES,
    "docs/journey.md": JOURNEY,
    "docs/performance-log.md": {"topics": log_index.index},
    "notebooks/benchmark.ipynb": NOTEBOOK,
}


def _fill_notebook(text: str, blocks, where: str) -> str:
    """The notebook's markdown cells filled, the rest of the file as it is
    (written as nbformat writes it: one-space indent, sorted keys)."""
    nb = json.loads(text)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            filled = markers.fill(source, blocks, where)
            if filled != source:
                cell["source"] = filled.splitlines(keepends=True)
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def generate(root: Path = ROOT) -> dict[str, str]:
    """{page: its text with every generated part written now}."""
    pages = {}
    for name, blocks in PAGES.items():
        text = (root / name).read_text()
        fill = _fill_notebook if name.endswith(".ipynb") else markers.fill
        pages[name] = fill(text, blocks, name)
    return pages


def stale(root: Path = ROOT) -> list[str]:
    """The pages whose committed text differs from what :func:`generate` writes."""
    return [name for name, text in generate(root).items() if (root / name).read_text() != text]


def write(root: Path = ROOT) -> list[str]:
    """Write every page that changed; the names of those written."""
    written = []
    for name, text in generate(root).items():
        if (root / name).read_text() != text:
            (root / name).write_text(text)
            written.append(name)
    return written
