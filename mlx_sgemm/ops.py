"""The public ops: one function per stage of the journey, each computing ``a @ b``."""

from __future__ import annotations

import contextlib

import mlx.core as mx

from . import device, registry, specs
from .problem import check_operand, plan

_poison = False


@contextlib.contextmanager
def poisoned_outputs():
    """Fill every kernel output with NaN before the kernel runs (for tests).

    An element the kernel forgets to write then stays NaN and fails any check,
    where an uninitialised buffer could hold a plausible stale value.
    """
    global _poison
    previous, _poison = _poison, True
    try:
        yield
    finally:
        _poison = previous


def launch(spec: specs.KernelSpec, a: mx.array, b: mx.array, stream=None) -> mx.array:
    """Run one kernel on validated float32 operands; the result has matmul's shape."""
    p = plan(a.shape, b.shape)
    if p.empty:
        return mx.zeros(p.out_shape, dtype=mx.float32, stream=stream)
    if a.shape != p.a_shape:
        a = a.reshape(p.a_shape, stream=stream)
    if b.shape != p.b_shape:
        b = b.reshape(p.b_shape, stream=stream)
    params = mx.array(p.params(spec.block_m, spec.block_n), dtype=mx.int32)
    (c,) = registry.kernel(spec)(
        inputs=[a, b, params],
        output_shapes=[p.kernel_out_shape()],
        output_dtypes=[mx.float32],
        grid=p.grid(spec.block_m, spec.block_n, spec.threadgroup),
        threadgroup=spec.threadgroup,
        template=list(spec.template) or None,
        init_value=float("nan") if _poison else None,
        stream=stream,
    )
    return c.reshape(p.out_shape, stream=stream) if c.shape != p.out_shape else c


def _make_op(stage: str):
    def op(a: mx.array, b: mx.array, *, stream=None) -> mx.array:
        check_operand(a, "a")
        check_operand(b, "b")
        chosen = device.backend(stream)
        if chosen == device.CPU_FALLBACK:
            plan(a.shape, b.shape)  # same errors as on a GPU
            return mx.matmul(a, b, stream=stream)
        return launch(specs.spec(stage, chosen), a, b, stream)

    op.__name__ = op.__qualname__ = stage
    op.__doc__ = (
        f"``a @ b`` in float32 with the ``{stage}`` kernel.\n\n"
        "Follows ``mx.matmul``: 1-D operands, broadcast batch dimensions. Both\n"
        "operands must be float32 arrays. On a device without Metal or CUDA it\n"
        "computes with ``mx.matmul`` (see :func:`mlx_sgemm.backend`)."
    )
    return op


naive = _make_op("naive")
tile_16 = _make_op("tile_16")
tile_32 = _make_op("tile_32")
tile_threads = _make_op("tile_threads")
tile_simdgroup = _make_op("tile_simdgroup")
tile_async = _make_op("tile_async")

STAGE_OPS = {
    op.__name__: op
    for op in (naive, tile_16, tile_32, tile_threads, tile_simdgroup, tile_async)
}
