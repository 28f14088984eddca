"""The benchmark notebook (notebooks/benchmark.ipynb), executed headless in its
recorded mode as scripts/build_notebook.py does: no cell errs, every chapter
shows its kernel, its figure and its table, and the committed outputs are the
ones its code produces now."""

import importlib.util
from pathlib import Path

import pytest

from .conftest import HAS_GPU

ROOT = Path(__file__).parent.parent
NOTEBOOK = ROOT / "notebooks" / "benchmark.ipynb"
CHAPTERS = ("1. naive", "2. tile", "3. tile_threads", "4. tile_simdgroup", "5. tile_async", "6. matmul",
            "7. INT8 emulation")


def builder():
    """scripts/build_notebook.py, the notebook's builder, as a module."""
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def executed():
    pytest.importorskip("nbclient")
    pytest.importorskip("sklearn", reason="the model section trains on scikit-learn's bundled digits")
    return builder().execute(NOTEBOOK)


def sections(nb) -> dict[str, list]:
    """The cells under each "## " heading, by its title."""
    found, title = {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            title = cell.source.splitlines()[0][3:]
            found[title] = []
        elif title is not None:
            found[title].append(cell)
    return found


def outputs(cells) -> list:
    return [out for cell in cells if cell.cell_type == "code" for out in cell.outputs]


def markdown(outs) -> list[str]:
    return [out.data["text/markdown"] for out in outs if "text/markdown" in out.get("data", {})]


def images(outs) -> list:
    return [out for out in outs if "image/png" in out.get("data", {})]


def section(nb, prefix: str) -> list:
    (title,) = [t for t in sections(nb) if t.startswith(prefix)]
    return sections(nb)[title]


def test_no_cell_errs_or_writes_to_stderr(executed):
    for cell in executed.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", f"{out.ename}: {out.evalue}\n{cell.source}"
            assert out.get("name") != "stderr", f"{out.text}\n{cell.source}"


def test_the_mode_is_shown_first(executed):
    first = outputs([next(c for c in executed.cells if c.cell_type == "code")])
    assert "mode: recorded" in "".join(o.get("text", "") for o in first)
    assert any(text.startswith("**Mode: recorded**") for text in markdown(first))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_shows_its_kernel_its_figure_and_its_table(executed, chapter):
    outs = outputs(section(executed, chapter))
    quoted = [text for text in markdown(outs) if text.startswith("`kernels/")]
    assert quoted and all("```" in text for text in quoted)
    assert len(images(outs)) == 1
    tables = [text for text in markdown(outs) if "| x mx.matmul |" in text]
    assert len(tables) == 1 and "% of the" in tables[0]  # the ceiling line below the table


def test_the_int8_chapter_shows_its_phases_its_accuracy_and_where_it_runs(executed):
    cells = section(executed, "7. INT8 emulation")
    said = markdown(outputs(cells))
    quoted = "".join(text for text in said if text.startswith("`kernels/"))
    assert all(f"`kernels/cuda/{name}`" in quoted for name in ("int8_products.cu", "int8_reconstruct.cu"))
    assert "wgmma_s8_ss_n256" in quoted and "quotient" in quoted
    assert any(text.startswith("Recorded: `int8-emulation-") for text in said)
    (phases,) = [text for text in said if "| phase |" in text]
    assert "products (wgmma, mod p)" in phases and "INT8 peak" in phases and "bandwidth" in phases
    (accuracy,) = [text for text in said if "| computed by |" in text]
    assert "cuBLAS SGEMM componentwise" in accuracy and "The emulation computed" in accuracy
    (heading,) = [c.source for c in executed.cells if c.source.startswith("## 7. INT8 emulation")]
    prose = " ".join([heading, *(cell.source for cell in cells if cell.cell_type == "markdown")])
    assert "Hopper" in prose and "no INT8 matrix type" in prose and "2504.08009" in prose and "GEMMul8" in prose
    assert "to come" not in prose


def test_accuracy_and_model_sections(executed):
    accuracy = outputs(section(executed, "Accuracy"))
    assert len(images(accuracy)) == 1 and any("normal inputs" in text for text in markdown(accuracy))
    model = outputs(section(executed, "In a model"))
    said = "".join(o.get("text", "") for o in model)
    assert "mlx_sgemm backend: " in said and ("No GPU" in said) == (not HAS_GPU)
    (table,) = markdown(model)
    assert "| float32 | mlx_sgemm.nn.Linear('matmul') |" in table and "| bfloat16 | mlx.nn.Linear |" in table
    assert len(images(outputs(section(executed, "All stages together")))) == 3


@pytest.mark.skipif(HAS_GPU, reason="the committed outputs are built on MLX's CPU backend; on a GPU the model "
                                    "section runs the kernels and says so")
def test_the_committed_outputs_are_current(executed):
    """Text outputs (and which outputs are images) as the code produces them now;
    if not, `python scripts/build_notebook.py` rebuilds them."""
    import nbformat

    build = builder()
    now, committed = build.comparable(executed), build.comparable(nbformat.read(NOTEBOOK, as_version=4))
    stale = [i for i, (a, b) in enumerate(zip(now, committed)) if a != b]
    assert len(now) == len(committed) and not stale, (
        f"notebooks/benchmark.ipynb is stale (cells {stale[:5]}, first:\n{now[stale[0]][1] if stale else ''}): "
        "run python scripts/build_notebook.py")


def test_the_committed_notebook_carries_its_figures():
    """What GitHub renders: PNG outputs in the file itself, no error among them."""
    import json

    cells = json.loads(NOTEBOOK.read_text())["cells"]
    outs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
    assert not [o for o in outs if o["output_type"] == "error"]
    assert len(images(outs)) == len(CHAPTERS) + 1 + 3  # chapters, accuracy, overview
