"""Run MLX's own BLAS tests (``mlx_suite/test_blas.py``, unchanged) with MLX's
products routed to one of this package's ops (see :mod:`routing`).

    python -m tests.conformance.run_mlx_suite matmul [--precision tf32] [--fake cuda]

``mx.matmul`` and ``@`` go to the op named, ``mx.addmm`` to ``mlx_sgemm.gemm``
at the same precision. The last line printed is the result as JSON (tests,
failures, errors, skipped, and the calls by where they went); the exit status
is 0 only when no test failed and at least ``MIN_PRODUCTS`` products (and
``MIN_ADDMM`` addmm calls) went through the package, so a routing bug cannot
pass as "no failures".

A process of its own per op, because ``MLX_ENABLE_TF32=0`` must be set before
MLX is first imported (as MLX's suite does in ``mlx_tests``): MLX's reference
ops that the tests compare against (segmented_mm, block_masked_mm, gather_mm)
would otherwise run at TF32 on CUDA and disagree with a float32-accurate op.

``--fake cuda`` / ``--fake metal`` (on a machine without that GPU): the
package's Python runs as on that backend, each launch computed by MLX
(``tests/conftest.py``, ``_fake_gpu``), so the choice of kernel, the padding,
the reshapes and Metal's fused gemm store are exercised by MLX's tests.
"""

from __future__ import annotations

import os

os.environ["MLX_ENABLE_TF32"] = "0"  # before MLX is imported; see above

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import unittest  # noqa: E402
from pathlib import Path  # noqa: E402

import mlx.core as mx  # noqa: E402

import mlx_sgemm  # noqa: E402
from mlx_sgemm import ops  # noqa: E402
from mlx_sgemm.dispatch import device, kernel_choice  # noqa: E402

from .routing import routed  # noqa: E402

SUITE = Path(__file__).with_name("mlx_suite")
OPS = ops.KERNELS  # matmul and every stage

# Below these, the routing is broken, whatever the tests say: MLX's suite makes
# 867 products and 65 addmm calls that the package takes on the CPU, 902-948
# and 152 on CUDA (where MLX's GPU-only tests run too), fewer at TF32 with the
# tests below set aside.
MIN_PRODUCTS = 400
MIN_ADDMM = 60

# On CUDA these tests compare a float32 product with MLX's own segmented_mm /
# block_masked_mm at an absolute tolerance of 1e-4, below the error of MLX's
# op itself: on an H200 at M = N = K = 1000, segmented_mm is 2.4e-4 from
# float64 at its worst element, this package's matmul 6.4e-5, and whether some
# element of the million differs by more than 1e-4 is chance (tile_async failed
# one run in two, matmul two in three; tile_threads, which sums in MLX's order,
# matches it bit for bit). tests/gpu/test_gpu_conformance_references.py checks
# the same products against float64 instead.
REFERENCE_LESS_ACCURATE_THAN_TOLERANCE = {
    "test_segmented_mm": "its tolerance (1e-4) is below the float32 error of MLX's segmented_mm it compares with",
    "test_block_masked_matmul": "its tolerance (1e-4) is below the float32 error of MLX's block_masked_mm's "
                                "gradients it compares with",
}

# One TF32 pass (precision="tf32" on CUDA) is about 1e-4 relative error: the
# tests whose tolerance is tighter than that cannot hold for it (nor for
# mx.matmul with MLX's default TF32); they run at float32 only.
TF32_TOO_TIGHT = {
    name: "its tolerance is tighter than TF32's error (about 1e-4 relative)"
    for name in ("test_matmul", "test_matmul_batched", "test_gather_matmul_grad", "test_gather_mm_sorted_vjp",
                 *REFERENCE_LESS_ACCURATE_THAN_TOLERANCE)
}


def set_aside(precision: str) -> dict[str, str]:
    """The tests that cannot hold for a correct op on this machine's GPU (not
    a faked one: there MLX computes every product), with the reason."""
    if device.backend() != device.CUDA:
        return {}
    return TF32_TOO_TIGHT if precision == "tf32" else REFERENCE_LESS_ACCURATE_THAN_TOLERANCE


def _fake_backend(backend: str):
    """The package's Python on a faked ``backend`` (tests/conftest.py)."""
    import pytest

    from tests.conftest import _fake_gpu

    stack = contextlib.ExitStack()
    patch = stack.enter_context(pytest.MonkeyPatch.context())
    launches = _fake_gpu(patch, backend)
    next(launches)
    stack.callback(lambda: next(launches, None))
    return stack


def _suite(aside: dict[str, str]) -> unittest.TestSuite:
    """MLX's tests, those in ``aside`` replaced by skips giving the reason."""
    sys.path.insert(0, str(SUITE))  # test_blas imports mlx_tests as a top-level module
    import test_blas

    kept = unittest.TestSuite()
    for test in _flatten(unittest.defaultTestLoader.loadTestsFromModule(test_blas)):
        name = test.id().rpartition(".")[2]
        kept.addTest(_skipped(test, aside[name]) if name in aside else test)
    return kept


def _skipped(test: unittest.TestCase, reason: str) -> unittest.TestCase:
    """A stand-in for ``test`` that is reported as skipped, with ``reason``."""
    def skip():
        raise unittest.SkipTest(reason)

    return unittest.FunctionTestCase(skip, description=test.id())


def _flatten(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from _flatten(test)
        else:
            yield test


def run(op_name: str, precision: str, fake: str | None, verbosity: int = 1) -> dict:
    op = ops.op_by_name(op_name, precision=precision)

    def addmm(c, a, b, alpha, beta, *, stream=None):
        return mlx_sgemm.gemm(a, b, c, alpha=alpha, beta=beta, precision=precision, stream=stream)

    aside = set_aside(precision)  # before a fake GPU stands in for the real one
    with contextlib.ExitStack() as stack:
        if fake:
            stack.enter_context(_fake_backend(fake))
        backend = device.backend() + (" (faked)" if fake else "")
        suite = _suite(aside)
        counts = stack.enter_context(routed(op, addmm))
        result = unittest.TextTestRunner(stream=sys.stderr, verbosity=verbosity).run(suite)
    return dict(
        op=op_name, precision=precision, backend=backend, mlx=mx.__version__,
        tests=result.testsRun, failures=len(result.failures), errors=len(result.errors),
        skipped=len(result.skipped), set_aside=sorted(aside), **counts.as_dict(),
    )


def passed(summary: dict) -> bool:
    return (summary["failures"] == 0 and summary["errors"] == 0
            and summary["products"] >= MIN_PRODUCTS and summary["addmm"] >= MIN_ADDMM)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=OPS)
    parser.add_argument("--precision", choices=kernel_choice.PRECISIONS, default="float32")
    parser.add_argument("--fake", choices=("cuda", "metal"), help="fake this GPU backend (no GPU needed)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    summary = run(args.op, args.precision, args.fake, verbosity=2 if args.verbose else 1)
    print(json.dumps(summary), flush=True)
    return 0 if passed(summary) else 1


if __name__ == "__main__":
    sys.exit(main())
