"""One kernel launch: the ``params`` input, grid and output shapes for a
(kernel, problem, K split), the reshapes around the call, the sum of split-K
partial products, and the NaN fill that tests use to catch unwritten outputs.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Callable

import mlx.core as mx

from ..dispatch.problem import BLOCKS_PER_MATRIX, TENSOR_MAPS, Plan, plan
from . import registry, specs, tensormap

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


def poisoned() -> bool:
    """Whether launches fill their outputs with NaN first (inside :func:`poisoned_outputs`)."""
    return _poison


def _init_value() -> float | None:
    """A kernel object's ``init_value``: NaN inside :func:`poisoned_outputs`, else none."""
    return float("nan") if _poison else None


@functools.lru_cache(maxsize=4096)
def _params_array(params: tuple[int, ...]) -> mx.array:
    """The ``params`` input, made once per distinct value. On CUDA a fresh
    mx.array per call cost 20-60 us (measured on an H200: MLX places arrays in
    managed memory), more than a small product itself."""
    return mx.array(params, dtype=mx.int32)


def launch(
    spec: specs.KernelSpec, a: mx.array, b: mx.array, stream=None, *, k_splits: int = 1, **extra,
) -> mx.array:
    """Run one kernel on validated operands of the spec's element types
    (``spec.operand_types``); the result, float32, has matmul's shape.

    ``k_splits`` > 1 splits K (any kernel: locate_tile): each threadgroup computes
    one stretch of K into a partial product of its own, and the partial products
    are summed here. ``extra`` holds any inputs beyond a, b and params that the
    spec names (``c_in`` and ``scalars`` for the fused gemm).
    """
    return prepared(spec, a.shape, b.shape, k_splits)(a, b, stream, extra)


def kernel_call(spec: specs.KernelSpec, p: Plan, k_splits: int = 1):
    """The kernel object, its ``params`` input and the launch's shape arguments
    for one (kernel, problem, split): what a call of the kernel object needs
    besides the operands (benchmarks/call_overhead.py calls it bare)."""
    params, shape_args = launch_arguments(spec, p, k_splits)
    return registry.kernel(spec), _params_array(tuple(params)), shape_args


def launch_arguments(spec: specs.KernelSpec, p: Plan, k_splits: int = 1) -> tuple[list[int], dict]:
    """``params`` (as a list) and the kernel object's shape arguments (outputs,
    grid, threadgroup, template) for one (kernel, problem, split)."""
    output_shapes = [p.kernel_out_shape(k_splits)]
    params = p.params(spec.block_m, spec.block_n, k_splits, spec.k_tile)
    if spec.persistent:
        per_matrix = blocks_per_matrix(spec, p, k_splits)
        grid = (k_splits * p.batch * per_matrix * spec.threadgroup[0], 1, 1)
    else:
        grid = p.grid(spec.block_m, spec.block_n, spec.threadgroup, k_splits)
    if spec.tensor_maps:
        # A's and B's maps for the TMA, and a slot for each block's copies of
        # them, from the first 128-byte boundary of the output (tile_wgmma.cu) on.
        assert len(params) <= BLOCKS_PER_MATRIX, "the batch shape runs into the tensor maps"
        # Of A's rows (M x K) in k-tiles of block_m rows; of B's rows (K x N)
        # in boxes of a k-tile's rows; of B^T's (a B that is a transposed view,
        # x @ W.T: W's rows) in k-tiles of block_n rows; of A^T's (a transposed
        # A) like B's. Each box is 128 bytes wide.
        element, k_rows = spec.operand_types[0], spec.k_tile
        maps = (tensormap.swizzled_rows(p.M, p.K, spec.block_m, element),
                tensormap.swizzled_rows(p.K, p.N, k_rows, element),
                tensormap.swizzled_rows(p.N, p.K, spec.block_n, element),
                tensormap.swizzled_rows(p.K, p.M, k_rows, element))
        params += [0] * (TENSOR_MAPS - len(params)) + [word for m in maps for word in m]
        if spec.persistent:
            params[BLOCKS_PER_MATRIX] = per_matrix
        output_shapes.append((2 * tensormap.WORDS * (grid[0] // spec.threadgroup[0]) + tensormap.WORDS,))
    shape_args = dict(
        output_shapes=output_shapes,
        output_dtypes=[getattr(mx, spec.output_type)] + [mx.float32] * (len(output_shapes) - 1),
        grid=grid,
        threadgroup=spec.threadgroup,
        template=template_arguments(spec),
    )
    return params, shape_args


# Blocks that fill an H100 / H200 (132 SMs), one persistent block each.
PERSISTENT_BLOCKS = 132


def blocks_per_matrix(spec: specs.KernelSpec, p: Plan, k_splits: int = 1) -> int:
    """A persistent kernel's blocks for each of its output matrices (batch
    entries x K splits): together about one an SM, at least one a matrix, at
    most one a tile."""
    tiles_m, tiles_n = p.tiles(spec.block_m, spec.block_n)
    return min(tiles_m * tiles_n, max(1, PERSISTENT_BLOCKS // (k_splits * p.batch)))


def template_arguments(spec: specs.KernelSpec) -> list | None:
    """``spec.template_args`` as MLX takes them: a dtype named by a string
    (the element types TA and TB) as the mx.Dtype."""
    return [(name, getattr(mx, value) if isinstance(value, str) else value)
            for name, value in spec.template_args] or None


@functools.lru_cache(maxsize=4096)
def prepared(spec: specs.KernelSpec, a_shape: tuple, b_shape: tuple, k_splits: int):
    """What :func:`launch` runs for one (kernel, operand shapes, split), with everything that
    depends on those alone worked out once: the plan, the kernel object, its
    ``params`` input, the grid and the reshapes. On a small product the per-call
    Python is a visible share of the time (docs/performance-log.md, "Per-call cost")."""
    p = plan(a_shape, b_shape)
    if p.empty:
        return lambda a, b, stream, extra: mx.zeros(p.out_shape, dtype=mx.float32, stream=stream)
    if spec.layer_operands:  # the kernel takes W, B's transposed view
        if len(b_shape) != 2 or k_splits != 1:
            raise ValueError(f"{spec.stage} multiplies by one 2-D b, unsplit; got b of shape {b_shape}")
        run_layer = layer_call(spec, a_shape, b_shape[::-1])
        return lambda a, b, stream, extra: run_layer(a, mx.swapaxes(b, 0, 1, stream=stream), stream)
    kernel, params, shape_args = kernel_call(spec, p, k_splits)
    # Reshapes are free for contiguous arrays; a strided view whose batch dims
    # must merge (or a 1-D operand of a view) is copied here, once.
    a_kernel_shape = p.a_shape if a_shape != p.a_shape else None
    b_kernel_shape = p.b_shape if b_shape != p.b_shape else None
    out_shape = p.out_shape if p.kernel_out_shape() != p.out_shape else None
    if out_shape is not None and k_splits == 1:
        # A kernel writes C row after row, M x N a batch entry, and reads no
        # shape of it: the caller's shape (batch dims as given, a 1-D operand's
        # dim dropped) names the same memory. Declared as the kernel's output,
        # it needs no reshape after it, a node fewer a call, which a decode
        # step's products each pay (docs/performance-log.md, "A bfloat16
        # decode step, kernel by kernel").
        shape_args = dict(shape_args, output_shapes=[p.out_shape, *shape_args["output_shapes"][1:]])
        out_shape = None
    plain = spec.input_names == specs.INPUT_NAMES
    round_a = tf32_rounding(a_shape) if spec.rounds_a_to_tf32 else None

    def run(a, b, stream, extra):
        if round_a is not None and a.dtype == mx.float32:  # a half A is exact in TF32
            a = round_a(a, stream)
        if a_kernel_shape:
            a = a.reshape(a_kernel_shape, stream=stream)
        if b_kernel_shape:
            b = b.reshape(b_kernel_shape, stream=stream)
        if plain:
            inputs = [a, b, params]
        else:
            named = dict(extra, a=a, b=b, params=params)
            if "c_in" in named:
                named["c_in"] = as_kernel_output(named["c_in"], p, stream)
            inputs = [named[name] for name in spec.input_names]
        c = kernel(  # c, and for a TMA kernel its blocks' tensor maps (not used after)
            inputs=inputs, **shape_args, init_value=_init_value(), stream=stream,
        )[0]
        if k_splits > 1 and spec.sum_to:
            c = split_sum(c, spec.sum_to, stream)
        elif k_splits > 1:
            c = mx.sum(c, axis=0, stream=stream)
        return c.reshape(out_shape, stream=stream) if out_shape is not None else c

    return run


def layer_call(spec: specs.KernelSpec, x_shape: tuple, w_shape: tuple):
    """``run(x, w, stream)``: ``x @ w.T`` by a kernel that takes a layer's
    operands as it holds them (``spec.layer_operands``: x at its own rank, W
    of shape (N, K) itself), for one pair of shapes, worked out once. The
    call is the kernel's node alone: no transposed view of W, no reshape of
    x's rows, none of C, each a node of MLX's graph that a decode step's
    products pay for on the host (docs/performance-log.md, "A layer's
    product, one node")."""
    rows, (n, k) = math.prod(x_shape[:-1]), w_shape
    if x_shape[-1] != k:
        raise ValueError(f"x of shape {x_shape} and W of shape {w_shape}: x's last dimension is not W's")
    kernel, params, shape_args = kernel_call(spec, plan((rows, k), (k, n)))
    shape_args = dict(shape_args, output_shapes=[(*x_shape[:-1], n)])

    def run(x, w, stream):
        return kernel(inputs=[x, w, params], **shape_args, init_value=_init_value(), stream=stream)[0]

    return run


def _pass_grid(spec: specs.KernelSpec, count: int) -> tuple[int, int, int]:
    """The grid of a pass over ``count`` elements, 4 a thread (split_sum.cu,
    tf32_round.cu): its blocks walk on where there are more than 4 an SM."""
    threads = spec.threadgroup[0]
    return max(1, min(-(-count // (4 * threads)), 4 * PERSISTENT_BLOCKS)) * threads, 1, 1


def tf32_rounding(shape: tuple) -> Callable[[mx.array, object], mx.array]:
    """A function rounding a float32 array of ``shape`` to nearest TF32, into a
    row-contiguous one (tf32_round.cu): what tile_wgmma at TF32 multiplies in
    place of A. Its kernel, params and grid are worked out once per shape."""
    spec = specs.cuda_tf32_round()
    kernel = registry.kernel(spec)
    count = math.prod(shape)
    columns = shape[-1] if shape and shape[-1] else 1
    args = dict(output_shapes=[shape], output_dtypes=[mx.float32], grid=_pass_grid(spec, count),
                threadgroup=spec.threadgroup, template=template_arguments(spec))
    # The count as rows x columns, two int32 words: it may pass 2**31.
    params = _params_array((count // columns, columns))
    return lambda x, stream: kernel(inputs=[x, params], **args, stream=stream)[0]


def split_sum(partials: mx.array, dtype: str, stream=None) -> mx.array:
    """The K splits' partial products (stacked on axis 0, float32) summed in
    order and rounded once to ``dtype``, by one kernel (split_sum.cu)."""
    splits, count = partials.shape[0], partials.size // partials.shape[0]
    spec = specs.cuda_split_sum(dtype)
    # The count as rows x columns, two int32 words: it may pass 2**31.
    columns = partials.shape[-1]
    params = _params_array((count // columns, columns, splits))
    return registry.kernel(spec)(
        inputs=[partials, params], output_shapes=[partials.shape[1:]], output_dtypes=[getattr(mx, dtype)],
        grid=_pass_grid(spec, count), threadgroup=spec.threadgroup, template=template_arguments(spec),
        init_value=_init_value(), stream=stream,
    )[0]


def as_kernel_output(c: mx.array, p: Plan, stream=None) -> mx.array:
    """``c`` laid out like the kernel's output: broadcast to the product's shape,
    batch dims merged (and 1-D operands' M or N restored) as the kernel sees
    them, row-contiguous. (How the fused gemm reads its C input.)"""
    c = mx.broadcast_to(c, p.out_shape, stream=stream)
    return mx.contiguous(c.reshape(p.kernel_out_shape(), stream=stream), stream=stream)
