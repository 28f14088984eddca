"""The benchmark notebook's live mode on a real GPU: it measures the kernels
now (small sizes, to stay quick), every chapter shows its figure, and the
accuracy section measures each precision mode on normal and wide-range
inputs."""

import math

import pytest

from mlx_sgemm.bench import measure, notebook, precision_modes
from mlx_sgemm.dispatch import device

from .. import test_notebook as committed
from ..conftest import GPU_BACKEND, requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]


def test_each_precision_mode_on_normal_and_wide_range_inputs():
    rows = precision_modes.measure_modes([256, 1024])
    assert {r["inputs"] for r in rows} == set(precision_modes.INPUTS)
    assert all(math.isfinite(r["error"]) and r["error"] < 1e-3 for r in rows), rows
    by = {(r["inputs"], r["kernel"], r["precision"], r["M"]): r["error"] for r in rows}
    for n in (256, 1024):
        base = by[("normal", measure.BASELINE, "float32", n)]
        for kernel in measure.KERNELS:  # the float32 contract: at most 2x the float32 baseline's error
            assert by[("normal", kernel, "float32", n)] <= 2 * base, (kernel, n)
        if GPU_BACKEND == device.CUDA:  # one TF32 pass: 10 mantissa bits, far from float32
            for inputs in precision_modes.INPUTS:
                assert by[(inputs, "matmul", "tf32", n)] > 10 * by[(inputs, "matmul", "float32", n)]


def test_the_notebook_measures_live(monkeypatch):
    pytest.importorskip("nbclient")
    pytest.importorskip("sklearn", reason="the model section trains on scikit-learn's bundled digits")
    monkeypatch.setenv(notebook.SIZES_ENV, "256,1024")
    nb = committed.builder().execute(committed.NOTEBOOK, timeout=900, recorded=False)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", f"{out.ename}: {out.evalue}\n{cell.source}"
    first = committed.outputs([next(c for c in nb.cells if c.cell_type == "code")])
    assert any(text.startswith("**Mode: live**") for text in committed.markdown(first))
    for chapter in committed.CHAPTERS:
        assert len(committed.images(committed.outputs(committed.section(nb, chapter)))) == 1, chapter
    accuracy = committed.markdown(committed.outputs(committed.section(nb, "Accuracy")))
    assert any(text.startswith("Measured now on") for text in accuracy)
    assert any("| normal inputs | wide-range inputs |" in text for text in accuracy)
    model = "".join(o.get("text", "") for o in committed.outputs(committed.section(nb, "In a model")))
    assert f"mlx_sgemm backend: {GPU_BACKEND}" in model and "No GPU" not in model
