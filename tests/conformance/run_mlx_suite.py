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
from mlx_sgemm.dispatch import device  # noqa: E402

from .routing import routed  # noqa: E402

SUITE = Path(__file__).with_name("mlx_suite")
OPS = ops.KERNELS  # matmul and every stage

# Below these, the routing is broken, whatever the tests say: MLX's suite makes
# 867 products and 65 addmm calls that the package takes on the CPU (more on a
# GPU, where MLX runs its GPU-only tests too).
MIN_PRODUCTS = 850
MIN_ADDMM = 60

# On CUDA, one TF32 pass (precision="tf32") is about 1e-4 relative error: the
# tests whose tolerance is tighter than that cannot hold for it (nor for
# mx.matmul with MLX's default TF32); they run at float32 only.
TF32_TOO_TIGHT: dict[str, str] = {}


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


def _suite(precision: str) -> unittest.TestSuite:
    sys.path.insert(0, str(SUITE))  # test_blas imports mlx_tests as a top-level module
    import test_blas

    suite = unittest.defaultTestLoader.loadTestsFromModule(test_blas)
    if precision != "tf32" or device.backend() != device.CUDA:
        return suite
    kept = unittest.TestSuite()
    for test in _flatten(suite):
        name = test.id().rpartition(".")[2]
        kept.addTest(unittest.FunctionTestCase(lambda r=TF32_TOO_TIGHT[name]: unittest.TestCase().skipTest(r),
                                               description=test.id()) if name in TF32_TOO_TIGHT else test)
    return kept


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

    with contextlib.ExitStack() as stack:
        if fake:
            stack.enter_context(_fake_backend(fake))
        backend = device.backend() + (" (faked)" if fake else "")
        suite = _suite(precision)
        counts = stack.enter_context(routed(lambda a, b, stream=None: op(a, b, stream=stream), addmm))
        result = unittest.TextTestRunner(stream=sys.stderr, verbosity=verbosity).run(suite)
    return dict(
        op=op_name, precision=precision, backend=backend, mlx=mx.__version__,
        tests=result.testsRun, failures=len(result.failures), errors=len(result.errors),
        skipped=len(result.skipped), **counts.as_dict(),
    )


def passed(summary: dict) -> bool:
    return (summary["failures"] == 0 and summary["errors"] == 0
            and summary["products"] >= MIN_PRODUCTS and summary["addmm"] >= MIN_ADDMM)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=OPS)
    parser.add_argument("--precision", choices=("float32", "tf32"), default="float32")
    parser.add_argument("--fake", choices=("cuda", "metal"), help="fake this GPU backend (no GPU needed)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    summary = run(args.op, args.precision, args.fake, verbosity=2 if args.verbose else 1)
    print(json.dumps(summary), flush=True)
    return 0 if passed(summary) else 1


if __name__ == "__main__":
    sys.exit(main())
