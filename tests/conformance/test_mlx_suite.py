"""MLX's test_blas.py, unchanged, against every public op (run_mlx_suite.py).

With a GPU: every op on it (matmul at both precisions). Without one: matmul
on the CPU fallback, every op on a faked CUDA GPU, and matmul with gemm's
fused store on a faked Apple GPU: the package's Python (kernel choice,
padding, reshapes, the fused store) runs for real, each launch computed by
MLX. Each run is a process of its own (MLX_ENABLE_TF32=0 must precede MLX's
import); they run side by side, one per core.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlx_sgemm import ops

from ..conftest import GPU_BACKEND, HAS_GPU
from . import conftest, run_mlx_suite

ROOT = Path(__file__).resolve().parents[2]
OP_PRECISIONS = [("matmul", "float32"), ("matmul", "tf32"), *((stage, "float32") for stage in ops.STAGE_OPS)]

if HAS_GPU:
    RUNS = [(op, precision, None) for op, precision in OP_PRECISIONS]
else:
    RUNS = ([("matmul", "float32", None)]
            + [(op, precision, "cuda") for op, precision in OP_PRECISIONS]
            + [("matmul", "float32", "metal")])  # Metal's own path: gemm's fused store


def _run(op: str, precision: str, fake: str | None) -> tuple[int, str, str]:
    command = [sys.executable, "-m", "tests.conformance.run_mlx_suite", op, "--precision", precision]
    command += ["--fake", fake] if fake else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def results():
    """Every run's (exit status, stdout, stderr), run side by side."""
    workers = min(len(RUNS), max(1, os.cpu_count() or 1), 8 if HAS_GPU else 2)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = {run: pool.submit(_run, *run) for run in RUNS}
    return {run: future.result() for run, future in futures.items()}


@pytest.mark.parametrize("op,precision,fake", RUNS, ids=lambda v: str(v) if v else "real")
def test_mlx_test_blas_passes(results, op, precision, fake):
    status, stdout, stderr = results[(op, precision, fake)]
    lines = stdout.strip().splitlines()
    assert lines, f"no summary printed; stderr:\n{stderr[-4000:]}"
    summary = json.loads(lines[-1])
    conftest.SUMMARIES.append(summary)
    expected = fake or GPU_BACKEND
    assert summary["backend"].startswith(expected), summary
    assert summary["failures"] == 0 and summary["errors"] == 0, stderr[-8000:]
    assert summary["products"] >= run_mlx_suite.MIN_PRODUCTS, f"too few products went through {op}: {summary}"
    assert summary["addmm"] >= run_mlx_suite.MIN_ADDMM, f"too few addmm calls went through gemm: {summary}"
    assert status == 0, stderr[-4000:]
