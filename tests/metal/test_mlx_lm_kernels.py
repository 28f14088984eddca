"""mlx-lm's own Metal kernels, called through mlx-lm's own Python code with
``mx.fast.metal_kernel`` returning checked kernels: each must run, equal its
reference, and check clean, or be reported with what its corpus entry says
(tests/metal/mlx_lm_corpus.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mlx_lm")

from mlx_sgemm.metal_check import checked_metal_kernels  # noqa: E402

from . import mlx_lm_corpus as corpus  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "metal-checker.md"


@pytest.fixture(scope="module")
def checked():
    with checked_metal_kernels(reload=corpus.MODULES) as log:
        yield log


def test_the_corpus_is_every_kernel_mlx_lm_builds(checked):
    assert sorted(set(checked.built)) == sorted(c.kernel for c in corpus.CASES)


@pytest.mark.parametrize("case", corpus.CASES, ids=[c.kernel for c in corpus.CASES])
def test_mlx_lm_kernel(checked, case):
    before = len(checked.dispatches)
    got, want = case.run()
    mine = [d.report for d in checked.dispatches[before:] if d.kernel == case.kernel]
    assert mine, f"{case.kernel} was not dispatched"
    if case.clean:
        for report in mine:
            report.assert_ok()
    else:  # the races its entry describes, named in mlx-lm's losses.py
        for report in mine:
            races = report.by_check("racecheck")
            assert races and len(races) == len(report.findings), str(report)
            assert all(loc.path.endswith("losses.py") for f in races for loc in f.locations)
    assert len(got) == len(want)
    if not case.equal:  # the reported bug changes the result: not compared
        return
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=corpus.TOLERANCE, atol=corpus.TOLERANCE)


def test_the_docs_python_example_runs():
    import re

    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)[1]
    exec(compile(code, str(DOC), "exec"), {})


def test_the_docs_give_the_corpus_coverage():
    assert corpus.coverage_table() in DOC.read_text(), (
        "docs/metal-checker.md's mlx-lm table differs from tests/metal/mlx_lm_corpus.py's "
        "coverage_table(); paste it in:\n" + corpus.coverage_table())
