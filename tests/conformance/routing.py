"""Route MLX's own products to one of this package's ops, and count them.

While :func:`routed` is active, ``mx.matmul``, the ``@`` operator
(``mx.array.__matmul__``) and ``mx.addmm`` call the op under test instead of
MLX's, so a test suite written for MLX runs unchanged against it. Three things
keep the count honest:

* A call made while the op itself runs (this package's CPU fallback computes
  with ``mx.matmul``; a faked GPU's launches too) goes to MLX's own op and is
  counted as ``inside``, not as a product of the op.
* Operands the package refuses by design (complex, integer or float64 arrays,
  anything that is not an ``mx.array``) go to MLX's op and are counted as
  ``refused``: MLX's behaviour is not ours to check there.
* Every other call goes to the op, whatever it raises: an error MLX would not
  raise (or a different type) fails the test that made the call.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable

import mlx.core as mx

from mlx_sgemm.dispatch.problem import OPERAND_DTYPES


@dataclasses.dataclass
class Counts:
    """Calls seen, by where they went."""

    products: int = 0  # through the op under test (mx.matmul and @)
    addmm: int = 0  # mx.addmm through the package's gemm
    refused: int = 0  # operands the package refuses: MLX's op
    inside: int = 0  # made while the op ran: MLX's op

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


_ORIGINAL_MATMUL = mx.matmul
_ORIGINAL_ADDMM = mx.addmm
_ORIGINAL_ARRAY_MATMUL = mx.array.__matmul__


def _ours(*operands) -> bool:
    """Whether the package takes these operands (else they are MLX's alone)."""
    return all(isinstance(x, mx.array) and x.dtype in OPERAND_DTYPES for x in operands)


@contextlib.contextmanager
def routed(product: Callable, addmm: Callable):
    """Route MLX's products: ``product(a, b, stream=...)`` serves ``mx.matmul``
    and ``@``, ``addmm(c, a, b, alpha, beta, stream=...)`` serves ``mx.addmm``.
    Yields the :class:`Counts`."""
    counts = Counts()
    depth = [0]  # > 0 while the op under test runs

    def call(ours: Callable, theirs: Callable, field: str, operands: tuple, *args, **kwargs):
        if depth[0]:
            counts.inside += 1
            return theirs(*args, **kwargs)
        if not _ours(*operands):
            counts.refused += 1
            return theirs(*args, **kwargs)
        setattr(counts, field, getattr(counts, field) + 1)
        depth[0] += 1
        try:
            return ours(*args, **kwargs)
        finally:
            depth[0] -= 1

    def matmul(a, b, *, stream=None):
        return call(product, _ORIGINAL_MATMUL, "products", (a, b), a, b, stream=stream)

    def array_matmul(a, b):
        return call(product, _ORIGINAL_ARRAY_MATMUL, "products", (a, b), a, b)

    def add_mm(c, a, b, alpha=1.0, beta=1.0, *, stream=None):
        return call(addmm, _ORIGINAL_ADDMM, "addmm", (c, a, b), c, a, b, alpha, beta, stream=stream)

    mx.matmul, mx.addmm, mx.array.__matmul__ = matmul, add_mm, array_matmul
    try:
        yield counts
    finally:
        mx.matmul, mx.addmm, mx.array.__matmul__ = _ORIGINAL_MATMUL, _ORIGINAL_ADDMM, _ORIGINAL_ARRAY_MATMUL
