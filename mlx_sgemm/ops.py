"""The public ops: one function per stage of the journey, and the adaptive matmul.

Every op validates its operands like ``mx.matmul``, picks a backend from the
stream, and runs inside an ``mx.custom_function`` whose vjp and jvp are computed
by the same op (dA = G @ B^T, dB = A^T @ G, with the transposes passed as views,
not copies), so ``mx.grad``, ``mx.vjp``, ``mx.jvp`` and ``mx.compile`` work
through it. On MLX's CPU backend the forward product is ``mx.matmul``; the
gradient plumbing is the same. A batch of ``a`` against one ``b`` of one or
two dimensions is multiplied as one matrix of all its rows, so that ``b`` is
read once (:func:`folded_rows`; a view whose batch does not merge into its
rows is copied once for it).

Dtypes: each operand may be float32, float16 or bfloat16, in any mix; the
result has the dtype ``mx.matmul`` gives those operands (``mx.result_type``:
float16 @ float16 is float16, bfloat16 @ bfloat16 bfloat16, every other mix
float32). Other dtypes raise TypeError naming the operand (``mx.matmul`` would
promote an integer operand mixed with a float one; we do not). Every kernel
accumulates in float32; the product is rounded once to the result dtype, by
the kernel (half_wgmma, half_mma, the small-M kernels) or by one cast after it. How a
half operand reaches the kernel depends on the stage
(:attr:`mlx_sgemm.build.specs.KernelSpec.converts_on_load` and
:attr:`~mlx_sgemm.build.specs.KernelSpec.half_tiles`; ``mlx_sgemm.explain``
says which, per operand):

* in half tiles, on Metal, where both operands are float16 or both bfloat16:
  ``tile_simdgroup``, ``small_m``, ``tile_async`` (so ``matmul``) and the
  fused ``gemm`` keep them as they are in threadgroup tiles of their own type
  (``tile_async`` and ``gemm`` fetch them with ``simdgroup_async_copy`` of
  their 2-byte elements, no cast first), load them into
  ``simdgroup_matrix<half / bfloat, 8, 8>`` and multiply those into float32
  accumulators, as MLX's steel GEMM does. A product of two halves is exact in
  float32, so the result is the same float32 accumulation as with float32
  tiles. (Half the bytes in threadgroup memory; any speed-up is unmeasured:
  there is no Apple GPU here.) A mixed pair takes the paths below.
* converted on load, inside the kernel (the operand is handed over as it is,
  no copy): each element becomes float32 as it is read, exactly. On CUDA:
  ``naive`` and ``tile_16`` / ``tile_32`` as they read an element,
  ``tile_threads`` and ``tile_simdgroup`` on the way from registers into
  their float32 shared-memory tiles, ``small_m`` as its FMAs read its
  cp.async windows (which hold the halves as they are, twice as many
  windows in flight), ``small_m_wide`` in registers. On Metal: ``naive``,
  ``tile_16`` / ``tile_32``, ``tile_threads``, and for a mixed pair
  ``tile_simdgroup`` and ``small_m``, all reading through ``sgemm::Operand``.
* on the tensor cores as they are, on Hopper, where both operands are float16
  or both bfloat16: ``matmul`` (from 9 rows up, and ``deterministic=True``)
  runs ``half_wgmma``, which the TMA feeds with the operands as they lie in
  memory and whose ``wgmma`` products accumulate in float32; it rounds C to
  the half type itself (chapter 8 of docs/journey.md). On other CUDA GPUs
  (no wgmma) ``matmul`` runs ``half_mma`` for such a pair instead, cp.async
  copies of the operands as they lie feeding ``mma.sync`` m16n8k16 products,
  rounded the same way. Up to 8 rows, on any GPU from sm_80, ``matmul`` runs
  ``half_gemv``: W read straight into ``mma.sync``'s registers, C rounded by
  the kernel. The small-M kernels round C themselves too (a mixed pair's few
  rows, older GPUs).
* cast first, by one ``astype(float32)`` of the whole operand on the op's
  stream: CUDA's ``tile_async`` and ``tile_wgmma`` (``matmul`` from 9 rows up
  on Hopper for a mixed pair), and Metal's ``tile_async`` and fused ``gemm``
  for a mixed pair. Their copies (cp.async, the TMA, simdgroup_async_copy)
  move bytes into tiles that the matrix units read as float32, which leaves
  no step to convert in.

So on CUDA ``matmul`` multiplies a pair of one half type on the half tensor
cores at every size, converts a mixed pair on load where a product is bound by
reading its operands (M <= 8: small_m, small_m_wide), and casts a mixed pair
where the cast is a small part of the time (larger products, on the
tensor-core pipelines); on
Metal it casts only a mixed pair for ``tile_async``. The casts are inside the
custom function, so gradients come back in the operands' dtypes. On the CPU
fallback ``mx.matmul`` takes the halves as they are (same result dtype).

``mx.vmap``: the custom function's vmap rule folds the mapped axis into the
product's batch (:func:`_vmapped_product`), so one product serves every
example, and gradients go through it. It is used on the CPU fallback. On Metal
and CUDA, MLX 0.32 stops before it: ``mx.vmap`` also vectorizes every node of
a custom function's forward graph (they are inputs of its node) before it
calls the function's own rule, and our kernel's node (MLX's ``CustomKernel``)
has no vmap, so ``mx.vmap`` raises ``ValueError: [Primitive::vmap] Not
implemented for CustomKernel.`` from its own code, after ours has returned.
Pass the examples as a leading batch dimension instead: every op broadcasts
batch dimensions like ``mx.matmul``.

``mx.compile(fn, shapeless=True)`` does not work with these ops, and cannot in
MLX 0.32: a shapeless compiled function infers each node's output shape from
its inputs at every call (``Primitive::output_shapes``), and neither MLX's
custom-function node (``CustomTransforms``) nor its custom-kernel node
implements that. The call of the compiled function (already the first: the
shapes are inferred when the traced graph is replaced by the real inputs)
raises MLX's ``ValueError: [Primitive::output_shapes] CustomTransforms cannot
infer output shapes.`` from inside ``mx.compile``'s own code, after ours has
returned, so we cannot catch it and say more. (The refusal is also the right
answer: a kernel's ``params``, grid and kernel choice are worked out from the
shapes at trace time.) Compile without ``shapeless=True``: a compiled function
then retraces once per new input shape.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import mlx.core as mx

from .build import launcher, specs
from .build.launcher import poisoned_outputs  # noqa: F401 (mlx_sgemm.poisoned_outputs)
from .dispatch import device, kernel_choice, tuning_cache
from .dispatch.problem import OPERAND_DTYPES, Plan, check_bool, check_operand, dtype_name, plan

_F32 = mx.float32


def _sum_to(x: mx.array, shape: tuple[int, ...], stream) -> mx.array:
    """Sum a broadcast result (a gradient) back to the shape it was broadcast from."""
    lead = x.ndim - len(shape)
    axes = list(range(lead))
    axes += [lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1]
    if axes:
        x = mx.sum(x, axis=axes, keepdims=True, stream=stream)
    return x.reshape(shape, stream=stream) if x.shape != shape else x


def _matmul_vjp(product, a, b, g, stream):
    """Gradients of a @ b (matmul semantics) given the cotangent g, via `product`,
    in the dtypes of a and b (the cotangent has the product's, maybe wider)."""
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = mx.expand_dims(g2, -2, stream=stream)
    if b.ndim == 1:
        g2 = mx.expand_dims(g2, -1, stream=stream)
    da = product(g2, mx.swapaxes(b2, -1, -2, stream=stream))
    db = product(mx.swapaxes(a2, -1, -2, stream=stream), g2)
    da = _sum_to(da, a2.shape, stream).reshape(a.shape, stream=stream)
    db = _sum_to(db, b2.shape, stream).reshape(b.shape, stream=stream)
    return _as_dtype(da, a.dtype, stream), _as_dtype(db, b.dtype, stream)


def _as_dtype(x: mx.array, dtype: mx.Dtype, stream) -> mx.array:
    return x if x.dtype == dtype else x.astype(dtype, stream=stream)


def _vmapped_product(product, a, b, a_axis, b_axis, stream):
    """``product`` (an op's custom function) vectorized over ``a_axis`` of ``a``
    and ``b_axis`` of ``b`` (None: not mapped, the same for every example):
    (outputs, output axis), the custom function's vmap rule.

    The mapped axis becomes the front batch dimension, so the examples are one
    batched product: each mapped operand gets its axis moved to the front and
    size-1 batch dimensions after it up to the example's batch rank (an
    unmapped operand broadcasts against them as it is). A mapped 1-D example
    is a vector: (V, K) becomes (V, 1, K) for ``a``, (V, K, 1) for ``b``, and
    the added axis is squeezed from the result.
    """
    if a_axis is None and b_axis is None:
        return product(a, b), None
    a_example_ndim = a.ndim - (a_axis is not None)
    b_example_ndim = b.ndim - (b_axis is not None)
    batch_ndim = max(a_example_ndim, b_example_ndim, 2) - 2

    def to_front(x, axis, example_ndim, vector_axis):
        x = mx.moveaxis(x, axis, 0, stream=stream)
        if example_ndim == 1:
            x = mx.expand_dims(x, vector_axis, stream=stream)
        ones = batch_ndim + 3 - x.ndim  # (V, batch..., rows, columns)
        return mx.expand_dims(x, list(range(1, 1 + ones)), stream=stream) if ones else x

    if a_axis is not None:
        a = to_front(a, a_axis, a_example_ndim, 1)
    if b_axis is not None:
        b = to_front(b, b_axis, b_example_ndim, -1)
    out = product(a, b)
    if b_axis is not None and b_example_ndim == 1:
        out = mx.squeeze(out, -1, stream=stream)
    if a_axis is not None and a_example_ndim == 1:
        out = mx.squeeze(out, -1 if b_example_ndim == 1 else -2, stream=stream)
    return out, 0


@functools.cache
def _forward(choose: Callable[[str, Plan], kernel_choice.Launch], backend: str, stream, pad: bool = False,
             float32_out: bool = False):
    """``a @ b`` with the launch ``choose(backend, plan)``, the operands padded to
    aligned rows first where ``pad`` and :func:`kernel_choice.padding` say so (matmul;
    the stage ops run as they are). ``float32_out``: the float32 product as the
    kernel wrote it, not rounded to the operands' half dtype (gemm scales it
    first). No derivatives: see :func:`_differentiable`."""

    def forward(a, b):
        if backend == device.CPU_FALLBACK:
            if float32_out:  # MLX's CPU product of halves is float32's, rounded
                a, b = _as_dtype(a, _F32, stream), _as_dtype(b, _F32, stream)
            return mx.matmul(a, b, stream=stream)
        rows = folded_rows(a.shape, b.shape)
        if rows != a.shape:  # a batch of rows against one b: one product
            return forward(a.reshape(rows, stream=stream), b).reshape(plan(a.shape, b.shape).out_shape, stream=stream)
        # mx.matmul's dtype: float32 unless both are one half type
        dtype = _F32 if float32_out else mx.result_type(a, b)
        pad_k, pad_n, reads, run, _ = _route(
            choose, backend, a.shape, b.shape, a.dtype, b.dtype, pad, float32_out, *_route_depends())
        # A half operand goes to a kernel that converts on load as it is, to the
        # others cast to float32 (reads: the element types the kernel reads).
        a, b = _as_dtype(a, reads[0], stream), _as_dtype(b, reads[1], stream)
        if pad_k or pad_n:  # operands copied once, with aligned rows
            a = mx.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, pad_k)], stream=stream)
            b = mx.pad(b, [(0, 0)] * (b.ndim - 2) + [(0, pad_k), (0, pad_n)], stream=stream)
        c = run(a, b, stream, {})
        return _as_dtype(c[..., : c.shape[-1] - pad_n] if pad_n else c, dtype, stream)

    return forward


@functools.cache
def _differentiable(
    choose: Callable[[str, Plan], kernel_choice.Launch], backend: str, stream, pad: bool = False,
    float32_out: bool = False,
):
    """:func:`_forward` as an mx.custom_function whose vjp and jvp are products
    of the same kind.

    One per (kernel choice, backend, stream, pad, float32_out), created once: the
    vjp and jvp call it again, so higher derivatives run on our kernels too.
    """
    plain = _forward(choose, backend, stream, pad, float32_out)

    def forward(a, b):
        # The kernel has no derivative of its own, and MLX's forward mode (jvp)
        # visits every node between the primals and the custom function's
        # outputs: stopping the gradient on the kernel's inputs keeps it off that
        # path, so the jvp below is used instead. (Costs nothing: no copy.)
        return plain(mx.stop_gradient(a), mx.stop_gradient(b))

    product = mx.custom_function(forward)

    @product.vjp
    def vjp(primals, cotangent, output):
        a, b = primals
        return _matmul_vjp(product, a, b, cotangent, stream)

    @product.jvp
    def jvp(primals, tangents):
        # MLX passes None as the tangent of an operand the jvp is not taken for.
        (a, b), (da, db) = primals, tangents
        if da is None:
            return product(a, db)
        if db is None:
            return product(da, b)
        return product(da, b) + product(a, db)

    @product.vmap
    def vmap(inputs, axes):
        return _vmapped_product(product, *inputs, *axes, stream)

    return product


@functools.lru_cache(maxsize=4096)
def _route(choose, backend: str, a_shape: tuple, b_shape: tuple, a_dtype, b_dtype, pad: bool, float32_out: bool,
           *depends_on):
    """(pad_k, pad_n, reads, run, how): how ``forward`` computes one pair of
    operand shapes and dtypes, decided once; ``reads``: the dtypes the kernel
    reads a and b in (theirs, or float32 for an operand cast first); ``how``:
    the launch (:func:`route_plan`'s), which :func:`_layer_form` reads.

    The choice also depends on the GPU and on the autotuner's entries, which
    ``depends_on`` names (:func:`_route_depends`), so that a new autotune
    result takes effect at the next call.
    """
    pad_k, pad_n, a_shape, b_shape, how = route_plan(
        choose, backend, a_shape, b_shape, pad, (dtype_name(a_dtype), dtype_name(b_dtype)), float32_out)
    reads = tuple(getattr(mx, t) for t in how.spec.operand_types)
    if kernel_choice.is_emulated(how):
        emulated = kernel_choice.emulation_op(how)
        return pad_k, pad_n, reads, lambda a, b, stream, extra: emulated(a, b, stream=stream), how
    return pad_k, pad_n, reads, launcher.prepared(how.spec, a_shape, b_shape, how.k_splits), how


def route_plan(choose, backend: str, a_shape: tuple, b_shape: tuple, pad: bool,
               operand_types: tuple[str, str] = specs.FLOAT32_OPERANDS, float32_out: bool = False,
               wgmma: bool | None = None):
    """(pad_k, pad_n, padded a_shape, padded b_shape, launch): what ``forward``
    runs for one pair of operand shapes and element types (dtype names), before
    anything is built (``mlx_sgemm.explain`` shows it, for a GPU with or without
    ``wgmma``: None asks the device). The launch is
    :func:`kernel_choice.for_operands`' for those element types: half_wgmma for
    one half type where matmul's choice is a Hopper tensor-core kernel, half_mma
    where it is the large-product kernel of a GPU without wgmma, else the
    chosen kernel's instance that reads them as they are where it can. Rows are
    padded to 16-byte alignment in halves for a pair of one half type (also
    aligned, if more than needed, should they be cast to float32). ``wgmma``:
    whether to plan for a Hopper GPU (None: ask the device; explain plans for others)."""
    halves = operand_types[0] == operand_types[1] != "float32"
    p = plan(a_shape, b_shape)
    pad_k, pad_n = kernel_choice.padding(backend, p, 2 if halves else 4) if pad else (0, 0)
    if pad_k or pad_n:
        a_shape = (*a_shape[:-1], a_shape[-1] + pad_k)
        b_shape = (*b_shape[:-2], b_shape[-2] + pad_k, b_shape[-1] + pad_n)
        p = plan(a_shape, b_shape)
    how = kernel_choice.for_operands(choose(backend, p), backend, p, operand_types, float32_out,
                                     getattr(choose, "deterministic", False), getattr(choose, "matmul", False),
                                     wgmma, getattr(choose, "layer", False))
    return pad_k, pad_n, a_shape, b_shape, how


# The calls made so far, by (choose, stream, pad, operand shapes): the state they
# were made in (_call_state) and the compiled function that served them. A call
# like one before it (a model's every step) is then this lookup, a few reads
# and the compiled function: on an H200's host matmul's own Python went from
# 4.5 to 1.8 us a call (mx.matmul builds its whole call in ~1.3-1.7 us;
# docs/performance-log.md, "Per-call cost").
_calls: dict = {}
MAX_CALLS = 1024  # then forgotten at once, like a cache that is rarely full


def _call_state() -> tuple:
    """What a call's compiled function depends on besides its key: the
    autotuner's entries and the poison flag. (The backend is the key's: the
    stream named, or the default device's default stream.)"""
    return tuning_cache.generation(), launcher.poisoned()


def _run(choose, a, b, stream, pad: bool = False, float32_out: bool = False) -> mx.array:
    """``a @ b`` on the kernel ``choose`` picks (see :func:`_forward` for ``pad``
    and ``float32_out``), checked, built and compiled once per call shape."""
    if stream is not None:
        stream = device.canonical(stream)  # what the caches below are keyed by
    # MLX's compile keeps a recording per default stream and traces anew under
    # another (mlx-lm generates on a stream of its own), so the compiled
    # function is made, and recorded, per default stream as well (_compiled).
    current = device.current_stream()
    if type(a) is mx.array and type(b) is mx.array:
        # Only calls that passed the checks below are remembered: a key with
        # any other dtype is never found.
        seen = _calls.get((choose, stream, current, pad, float32_out, a.shape, b.shape, a.dtype, b.dtype))
        if seen is not None and seen[0] == _call_state():
            return seen[1](a, b)
    check_operand(a, "a", OPERAND_DTYPES)
    check_operand(b, "b", OPERAND_DTYPES)
    backend = device.backend(stream)
    if backend == device.CPU_FALLBACK:
        plan(a.shape, b.shape)  # shape errors before anything is built
        return _differentiable(choose, backend, stream, pad, float32_out)(a, b)
    state = _call_state()
    fn = _compiled(choose, backend, stream, pad, float32_out, a.shape, b.shape, *state, current,
                   dtypes=(a.dtype, b.dtype))
    if len(_calls) >= MAX_CALLS:
        _calls.clear()
    _calls[(choose, stream, current, pad, float32_out, a.shape, b.shape, a.dtype, b.dtype)] = (state, fn)
    return fn(a, b)


@functools.lru_cache(maxsize=1024)
def _compiled(choose, backend: str, stream, pad: bool, float32_out: bool, a_shape: tuple, b_shape: tuple,
              *depends_on, dtypes: tuple = (_F32, _F32), b_transposed: bool = False):
    """The op for one shape pair (and operand ``dtypes``), under ``mx.compile``
    (``pad`` and ``float32_out``: see :func:`_forward`). ``b_transposed``: the
    function takes B^T (a layer's weight, of shape ``b_shape`` reversed) and
    multiplies by its transposed view, made inside the recorded graph, or
    hands it as it is to a kernel that takes W itself (:func:`_layer_form`;
    see :func:`layer_product`).

    Why: a call of the uncompiled op costs ~30 us of host time on an H200's
    host (Python, MLX's custom-function and custom-kernel nodes, and two
    stop_gradient nodes), against mx.matmul's ~19; products of a few rows take
    less than that on the GPU. A compiled function replays its recorded graph
    from C++ without running our Python (docs/performance-log.md, "Per-call cost").

    Two graphs, one function. MLX records the graph at the first call whose
    operands are not tracers and replays it at every such call after; under a
    transform (grad, vjp, jvp, vmap, an enclosing compile) the operands are
    tracers, and MLX runs the function as written. So the recording is made
    here, at once, from stand-in operands, of the plain forward (the kernel
    alone: a plain call needs no derivative rules), and every later run as
    written is the custom function with its vjp and jvp. (The custom-function
    node cost 0-1.2 us of host time a call in the probes on an H200's host.)
    Should MLX record later (compile disabled, say), it records the custom
    function: perhaps slower, as correct.

    One compiled function per shape pair, each a function object of its own:
    MLX keeps a function's compiled graphs in one list that every call scans.
    The graph holds what the Python decided while it was traced (the kernel,
    the autotuner's entries in use, poisoned outputs), so ``depends_on`` names
    those (tuning.generation(), the poison flag), and the default stream of
    the calls it serves: MLX keeps a recording per default stream, and one
    made after the first (by a call on mlx-lm's generation stream, say) would
    be of the custom function, three nodes more a call. Shape errors are raised here,
    before anything is traced, and an empty product (no kernel) is not compiled.
    """
    p = plan(a_shape, b_shape)
    product = _differentiable(choose, backend, stream, pad, float32_out)
    b_of = (lambda bt: bt.T) if b_transposed else (lambda b: b)  # noqa: E731
    if p.empty:
        return lambda a, b: product(a, b_of(b))
    route = _route(choose, backend, folded_rows(a_shape, b_shape), b_shape, *dtypes, pad, float32_out,
                   *_route_depends())  # launch errors here, too
    plain = _forward(choose, backend, stream, pad, float32_out)
    # A kernel that takes the layer's x and W as they are records its node alone.
    layer_run = _layer_form(route, stream, a_shape, b_shape, dtypes) if b_transposed else None
    record = layer_run or (lambda a, b: plain(a, b_of(b)))
    recording = [True]
    compiled = mx.compile(lambda a, b: record(a, b) if recording[0] else product(a, b_of(b)))
    compiled(mx.zeros(a_shape, dtype=dtypes[0]),  # records; nothing runs
             mx.zeros(b_shape[::-1] if b_transposed else b_shape, dtype=dtypes[1]))
    recording[0] = False
    return compiled


def _layer_form(route: tuple, stream, a_shape: tuple, b_shape: tuple, dtypes: tuple):
    """``run(x, w)`` where ``route`` (:func:`_route`'s, for ``x @ w.T``) is a
    kernel that takes a layer's operands as it holds them
    (``KernelSpec.layer_operands``) and nothing is padded or cast around it;
    else None. Its graph is the kernel's node alone, where the plain
    forward's is W's transposed view, x's rows reshaped and the kernel
    (launcher.layer_call)."""
    names = (dtype_name(dtypes[0]), dtype_name(dtypes[1]))
    pad_k, pad_n, _, _, how = route
    if (not how.spec.layer_operands or pad_k or pad_n or how.k_splits != 1
            or how.spec.operand_types != names or how.spec.output_type != names[0]):
        return None
    run = launcher.layer_call(how.spec, a_shape, b_shape[::-1])
    return lambda x, w: run(x, w, stream)


def _route_depends() -> tuple:
    """What the kernel choice for a shape depends on besides the shape."""
    return tuning_cache.generation(), device.has_wgmma(), device.name()


@functools.cache
def _stage_kernel(stage: str) -> Callable[[str, Plan], kernel_choice.Launch]:
    return lambda backend, _plan: kernel_choice.Launch(kernel_choice.stage_spec(stage, backend))


def _make_op(stage: str):
    choose = _stage_kernel(stage)

    def op(a: mx.array, b: mx.array, *, stream=None) -> mx.array:
        return _run(choose, a, b, stream)

    op.__name__ = op.__qualname__ = stage
    op.__doc__ = (
        f"``a @ b``, accumulated in float32, with the ``{stage}`` kernel.\n\n"
        "Follows ``mx.matmul``: 1-D operands, broadcast batch dimensions, any\n"
        "strides (transposed views are read in place). Operands are float32,\n"
        "float16 or bfloat16 arrays; the result has ``mx.matmul``'s dtype for\n"
        "them (see :mod:`mlx_sgemm.ops`). Differentiable. One kernel, K never\n"
        "split: a row's result does not depend on the other rows, as with\n"
        "``matmul(..., deterministic=True)``. On a device without Metal or\n"
        "CUDA, or on a CPU stream, it computes with ``mx.matmul`` (see\n"
        ":func:`mlx_sgemm.backend`)."
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
KERNELS = ("matmul", *STAGE_OPS)


def _checked_name(kernel: str, precision: str, deterministic: bool) -> None:
    kernel_choice.check_precision(precision)
    check_bool(deterministic, "deterministic")
    if kernel != "matmul" and kernel not in STAGE_OPS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")


def op_by_name(kernel: str, precision: str = "float32", deterministic: bool = False):
    """The op called ``kernel``: "matmul" (at ``precision``, ``deterministic``
    or not) or a stage name (one kernel each: always batch-invariant)."""
    _checked_name(kernel, precision, deterministic)
    if kernel == "matmul":
        return functools.partial(matmul, precision=precision, deterministic=deterministic)
    return STAGE_OPS[kernel]


def layer_product(kernel: str, precision: str = "float32", deterministic: bool = False):
    """``(x, w) -> x @ w.T`` on the default stream, as :func:`op_by_name`'s op
    computes ``x @ w.T`` with ``w.T`` a transposed view: a layer's product
    (mlx_sgemm.nn), its arguments checked here, once. One for each layer.
    The kernel choice is the op's but for a model's products side by side:
    ``half_gemv``'s blocks for a layer (kernel_choice.half_gemv).

    A decode step makes ~30 of these and is bound by the host's time
    (docs/performance-log.md, "A bfloat16 decode step, kernel by kernel" and
    "A layer's call against the compiled call"), so the call is the least
    that stays right: the layer's last call is remembered (its weight's id,
    x's shape and dtype, the default stream, the autotuner's generation and
    the poison flag), and a call like it is that compiled function's replay,
    with ``w.T`` made inside its recorded graph (for a token alone, the
    kernel's node alone: :func:`_layer_form`). Any other call takes
    :func:`_run`'s checks and route, then is remembered in its turn (a model
    in training, whose weights are new arrays each step, takes that path).
    x's batch dimensions are folded into its rows, as every op's are
    against a 2-D b (:func:`folded_rows`)."""
    _checked_name(kernel, precision, deterministic)
    choose, pad = (_matmul_choice(precision, deterministic, layer=True) if kernel == "matmul"
                   else (_stage_kernel(kernel), False))
    # (id(w), x.shape, x.dtype, default stream, _call_state(), compiled function).
    # w's id, not w: the layer must not keep a weight it no longer holds alive
    # (a model in training would hold two copies). Should a new weight reuse
    # the id, MLX's compiled function still compares its operands' shapes and
    # dtypes with its recording's and traces anew where they differ.
    last: list = [None]

    def product(x: mx.array, w: mx.array) -> mx.array:
        seen = last[0]
        if (seen is not None and seen[0] == id(w) and seen[1] == x.shape and seen[2] == x.dtype
                and seen[3] == mx.default_stream(mx.default_device()) and seen[4] == _call_state()):
            return seen[5](x, w)
        return _first_layer_call(choose, pad, last, x, w)

    return product


def _first_layer_call(choose, pad: bool, last: list, x, w) -> mx.array:
    """A layer's call unlike its last one (see :func:`layer_product`): checked
    and routed as :func:`_run` does ``x @ w.T``, and remembered in ``last``
    where it has a compiled function."""
    backend = device.backend(None)
    if type(x) is not mx.array or type(w) is not mx.array or backend == device.CPU_FALLBACK:
        return _run(choose, x, w.T if type(w) is mx.array else w, None, pad)  # its errors, or mx.matmul's product
    wt = w.T
    check_operand(x, "a", OPERAND_DTYPES)
    check_operand(wt, "b", OPERAND_DTYPES)
    current, state = device.current_stream(), _call_state()
    fn = _compiled(choose, backend, None, pad, False, x.shape, wt.shape, *state, current,
                   dtypes=(x.dtype, w.dtype), b_transposed=True)
    last[0] = (id(w), x.shape, x.dtype, current, state, fn)
    return fn(x, w)


@functools.lru_cache(maxsize=4096)
def folded_rows(a_shape: tuple, b_shape: tuple) -> tuple:
    """The shape of ``a`` as the kernels multiply it: ``a_shape``, or, for a
    batch of matrices against one ``b`` of at most two dimensions (a batched
    decode step's tokens against a weight, a batched prompt), all of a's rows
    as one matrix. As a batch, each entry's blocks would read all of b again:
    b from memory once an entry, where mx.matmul reads it once
    (docs/performance-log.md, "A batch of rows against one weight, one
    product"). A reshape: no copy where a's rows lie one after another, as an
    activation's do; a view whose batch does not merge is copied once. The
    rows stay a batch where there are 2**31 or more of them: the kernels'
    ``params`` hold M as an int32."""
    rows = math.prod(a_shape[:-1])
    if len(a_shape) > 2 and len(b_shape) <= 2 and math.prod(a_shape[:-2]) > 1 and rows < 2**31:
        return (rows, a_shape[-1])
    return tuple(a_shape)


def matmul(
    a: mx.array, b: mx.array, *, precision: str = "float32", deterministic: bool = False, stream=None,
) -> mx.array:
    """``a @ b`` with the fastest of our kernels for the shape and precision.

    Args:
        a, b: float32, float16 or bfloat16 arrays, with ``mx.matmul``'s
            semantics (1-D operands, broadcast batch dimensions, any strides)
            and result dtype (see :mod:`mlx_sgemm.ops`). A batch of ``a``
            against a ``b`` of one or two dimensions is multiplied as one
            matrix of all its rows (:func:`folded_rows`), as every op here does.
        precision: ``"float32"`` (default): float32-accurate on every backend.
            ``"tf32"``: on CUDA, one TF32 tensor-core pass (about 1e-4 relative
            error, like ``mx.matmul``'s CUDA default). Apple GPUs have no TF32
            mode: on Metal, and on the CPU, ``"tf32"`` computes in float32 (more
            accurate than asked, never less). Anything else raises ValueError.
        deterministic: ``True``: batch-invariant. Each row of the result is
            bitwise the same whatever M, batch or call it is computed in: one
            kernel per (precision, backend) for every shape, never chosen by
            M (:func:`mlx_sgemm.dispatch.kernel_choice.deterministic`), K never
            split, no autotune-cache lookup, no padding. Slower on few rows,
            where the default runs kernels made for them. Holds for finite
            operands on the GPU backends; on the CPU fallback the product is
            ``mx.matmul``, which promises nothing of the kind.
        stream: stream or device; a CPU one computes with ``mx.matmul``.

    Differentiable. The kernel is the one :func:`mlx_sgemm.autotune` found
    fastest for this shape class on this device, if it ran, else the heuristic
    :func:`mlx_sgemm.dispatch.kernel_choice.choose` (with K split where tiles are few).
    """
    if precision == "float32" and deterministic is False:
        # The default call, whose arguments need no checks: each check is a
        # Python call, and a product one at a time pays its host time
        # (docs/performance-log.md, "A layer's call against the compiled call").
        return _run(_DEFAULT_CHOICE, a, b, stream, True)
    kernel_choice.check_precision(precision)
    check_bool(deterministic, "deterministic")
    choose, pad = _matmul_choice(precision, deterministic)
    return _run(choose, a, b, stream, pad)


def _matmul_choice(precision: str, deterministic: bool, layer: bool = False) -> tuple:
    """(choose, pad) of matmul: the heuristic or the autotuner's pick, its
    operands padded to aligned rows; deterministic, one kernel, as they are.
    ``layer``: a model layer's (kernel_choice.chooser)."""
    if deterministic:
        return kernel_choice.deterministic_chooser(precision), False
    # One call form each (functools.cache tells chooser(p) from chooser(p, False)).
    return (kernel_choice.chooser(precision, layer=True) if layer else kernel_choice.chooser(precision)), True


_DEFAULT_CHOICE = kernel_choice.chooser("float32")  # matmul's choose at its default arguments (pad: True)


def gemm(
    a: mx.array, b: mx.array, c: mx.array | None = None, *,
    alpha: float | mx.array = 1.0, beta: float | mx.array = 0.0, precision: str = "float32", stream=None,
) -> mx.array:
    """BLAS's GEMM: ``alpha * (a @ b) + beta * c``.

    ``a``, ``b`` and ``c`` may be float32, float16 or bfloat16; the result has
    the dtype ``alpha * (a @ b) + beta * c`` has in MLX. ``c`` must broadcast to
    the product's shape (it may be omitted when beta is 0). ``alpha`` and
    ``beta`` are numbers or scalar arrays, and they are the kernel's inputs,
    never part of what is compiled or cached: a loop with a new alpha every
    step builds nothing new. As in BLAS, where beta is 0 ``c`` is not read: NaN
    or Inf in ``c`` do not reach the result. On Metal the scaling and the
    addition of ``c`` happen in the kernel's store (the interface of Fast
    Matrix Multiply on an Apple GPU, kernels/metal/tile_async.metal); elsewhere
    they are MLX element-wise ops after :func:`matmul`. Differentiable in a, b
    and c (not in alpha and beta).
    """
    check_operand(a, "a", OPERAND_DTYPES)
    check_operand(b, "b", OPERAND_DTYPES)
    p = plan(a.shape, b.shape)
    alpha, beta = _gemm_scalar(alpha, "alpha"), _gemm_scalar(beta, "beta")
    beta_is_zero = isinstance(beta, float) and beta == 0.0  # known here: c need not exist
    if c is None:
        if not beta_is_zero:
            raise ValueError("c is required when beta is not 0")
    else:
        check_operand(c, "c", OPERAND_DTYPES, scalar_ok=True)
        try:
            fits = mx.broadcast_shapes(c.shape, p.out_shape) == p.out_shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"c {c.shape} does not broadcast to the shape of a @ b, {p.out_shape}")
    kernel_choice.check_precision(precision)
    dtype = mx.result_type(*(x for x in (a, b, c) if x is not None), *(x for x in (alpha, beta) if isinstance(x, mx.array)))
    if device.backend(stream) == device.METAL and p.out_shape and not p.empty:
        c = mx.zeros((), dtype=_F32, stream=stream) if c is None else c
        scalars = mx.stack([_as_f32_scalar(alpha), _as_f32_scalar(beta)])
        return _as_dtype(_fused_gemm(stream)(a, b, c, scalars), dtype, stream)
    # As mx.addmm: alpha * (a @ b) + beta * c in float32, rounded once to the
    # result dtype. (A half product rounded first overflows where alpha would
    # have brought it back into range.)
    product = _run(kernel_choice.chooser(precision), a, b, stream, pad=True, float32_out=True)
    product = _in_float32(alpha, stream) * product
    if beta_is_zero:
        out = product
    else:
        c = _as_dtype(c, _F32, stream)
        if isinstance(beta, mx.array):  # zero or not is known on the device alone
            out = mx.where(beta == 0, product, product + _in_float32(beta, stream) * c, stream=stream)
        else:
            out = product + beta * c
    return _as_dtype(mx.broadcast_to(out, p.out_shape, stream=stream), dtype, stream)


def _gemm_scalar(x, name: str) -> float | mx.array:
    """alpha or beta as a Python float or a 0-d float array; errors name it."""
    if isinstance(x, mx.array):
        real = mx.issubdtype(x.dtype, mx.floating) or mx.issubdtype(x.dtype, mx.integer)
        if x.size != 1 or not real:
            raise TypeError(f"{name} must be a number or a one-element real array, got shape {x.shape}, {x.dtype}")
        return x.reshape(())
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a number or a one-element real array, got {type(x).__name__}")
    return float(x)


def _in_float32(x: float | mx.array, stream) -> float | mx.array:
    """alpha or beta for float32 arithmetic: a float as it is (a Python number
    takes the array's dtype), an array cast."""
    return x if isinstance(x, float) else _as_dtype(x, _F32, stream)


def _as_f32_scalar(x: float | mx.array) -> mx.array:
    return x.astype(_F32) if isinstance(x, mx.array) else mx.array(x, dtype=_F32)


@functools.cache
def _fused_gemm(stream):
    """The Metal kernel that scales and adds c in its store, with gradients; one
    per stream, since alpha and beta come in as the ``scalars`` input."""

    def forward(a, b, c, scalars):
        a, b, c, scalars = (mx.stop_gradient(x) for x in (a, b, c, scalars))  # see _differentiable
        # Operands of one half type in half tiles, others as float32; c_in float32.
        kernel = specs.spec("gemm", device.METAL).reading(dtype_name(a.dtype), dtype_name(b.dtype))
        a, b = (_as_dtype(x, getattr(mx, t), stream) for x, t in zip((a, b), kernel.operand_types))
        return launcher.launch(kernel, a, b, stream, c_in=_as_dtype(c, _F32, stream), scalars=scalars)

    fused = mx.custom_function(forward)

    @fused.vjp
    def vjp(primals, cotangent, output):
        a, b, c, scalars = primals
        product = _differentiable(kernel_choice.chooser("float32"), device.METAL, stream)
        da, db = _matmul_vjp(product, a, b, scalars[0] * cotangent, stream)
        dc = _as_dtype(_sum_to(scalars[1] * cotangent, c.shape, stream), c.dtype, stream)
        return da, db, dc, mx.zeros_like(scalars, stream=stream)

    return fused

