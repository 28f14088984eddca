"""This package's GEMM kernels in the Metal checker (mlx_sgemm.metal_check),
launched as ``mlx_sgemm.build.launcher.launch`` launches them on a GPU.

The source is built by :func:`mlx_sgemm.build.signatures.metal_source` from the
same :class:`~mlx_sgemm.build.specs.KernelSpec` the registry gives
``mx.fast.metal_kernel``, the launch is shaped by
:func:`mlx_sgemm.dispatch.problem.plan`, and the buffers are bound in the order
MLX's ``CustomKernel::eval_gpu`` binds them. Operands are float32, or float16
and bfloat16 as :mod:`.elements` holds them, each bound in its own element type
to the spec's instance for those types (``KernelSpec.reading``), as MLX binds a
half array. Every run is checked (memcheck, racecheck, synccheck, initcheck):
the first finding raises KernelError.
"""

from __future__ import annotations

import numpy as np

from mlx_sgemm.build import signatures
from mlx_sgemm.build.specs import KernelSpec
from mlx_sgemm.dispatch.problem import Plan, plan
from mlx_sgemm.metal_check import binding, runner, translation
from mlx_sgemm.metal_check.compiler import HarnessError
from mlx_sgemm.metal_check.findings import CompileError, KernelError  # noqa: F401 (re-exported)

from .elements import HALF_TYPES, element_type, values

Buffer = binding.Buffer


def array_infos(inputs: list[np.ndarray]) -> list[signatures.ArrayInfo]:
    """What MLX's signature depends on (dtype, rank, logical size) for each input."""
    return [signatures.ArrayInfo(element_type(x), x.ndim, x.size) for x in inputs]


def program(spec: KernelSpec, infos: list[signatures.ArrayInfo]) -> translation.Program:
    try:
        return translation.program(spec, infos)
    except translation.Unsupported as e:
        raise KernelError("unsupported", 0, str(e)) from None


def dispatch(prog, buffers, grid, threadgroup, *, seed=0, align_end=True, stats=None,
             report=None) -> list[bytes] | None:
    """One checked dispatch; the outputs' bytes. Raises KernelError for the first
    finding unless ``report`` (a list) is given, which then receives the report;
    ``stats`` (a dict) receives the runner's counts."""
    outputs, rep = runner.dispatch(prog, buffers, grid, threadgroup, seed=seed,
                                   align_end=align_end)
    if report is not None:
        report.append(rep)
    else:
        rep.raise_first()
    if stats is not None:
        stats.update(rep.stats)
    return outputs


def as_operand(x) -> np.ndarray:
    """An operand as the harness binds it: a half one as it is, anything else float32."""
    return x if isinstance(x, np.ndarray) and element_type(x) in HALF_TYPES else np.asarray(x, np.float32)


def launch_inputs(
    spec: KernelSpec, a: np.ndarray, b: np.ndarray, *, c: np.ndarray | None = None,
    alpha: float = 1.0, beta: float = 0.0, k_splits: int = 1,
) -> tuple[Plan, list[np.ndarray]]:
    """The plan of ``a @ b`` and the kernel's inputs, in ``spec.input_names`` order.

    ``a`` and ``b`` keep their strides (NumPy views stay views, as MLX passes
    arrays to kernels that take any layout) and a half element type (anything
    else becomes float32). A spec whose inputs include
    ``c_in`` and ``scalars`` computes ``alpha * a @ b + beta * c``; ``c`` (zeros
    if None) is broadcast to the result's shape and made row-contiguous, as the
    Python side does.
    """
    a, b = as_operand(a), as_operand(b)
    p = plan(a.shape, b.shape)
    if p.empty:
        raise HarnessError("an empty product launches no kernel")
    # A view where NumPy can make one (merging batch dims of a strided view may
    # need a copy, as it does in MLX).
    arrays = {
        "a": a.reshape(p.a_shape),
        "b": b.reshape(p.b_shape),
        "params": np.asarray(p.params(spec.block_m, spec.block_n, k_splits), dtype=np.int32),
    }
    if "c_in" in spec.input_names:
        c_full = np.zeros(p.out_shape, np.float32) if c is None else np.broadcast_to(
            np.asarray(c, dtype=np.float32), p.out_shape)
        arrays["c_in"] = np.ascontiguousarray(c_full).reshape(p.kernel_out_shape())
        arrays["scalars"] = np.asarray([alpha, beta], dtype=np.float32)
    elif c is not None or alpha != 1.0 or beta != 0.0:
        raise HarnessError(f"{spec.stage} computes a @ b only: no c, alpha or beta")
    return p, [arrays[name] for name in spec.input_names]


def matmul(
    spec: KernelSpec, a: np.ndarray, b: np.ndarray, *, c: np.ndarray | None = None,
    alpha: float = 1.0, beta: float = 0.0, seed: int = 0, align_end: bool = True,
    stats: dict[str, int] | None = None, k_splits: int = 1, report: list | None = None,
) -> np.ndarray:
    """``a @ b`` with a Metal kernel on the CPU, launched as ``launcher.launch`` does
    (None when a finding stopped the run; only with ``report``).

    Operands of any strides are bound as MLX binds them
    (:func:`mlx_sgemm.metal_check.binding.strided_buffer`); ``c``, ``alpha``,
    ``beta``: see :func:`launch_inputs`; ``stats``, ``report``: see
    :func:`dispatch`; ``k_splits``: K split that many ways, the partial products
    summed here (as launcher.launch does). Half operands run on ``spec``'s
    instance for their element types.
    """
    a, b = as_operand(a), as_operand(b)
    spec = spec.reading(element_type(a), element_type(b))
    # An operand the instance does not read as it is becomes float32 first, as
    # the package casts it.
    a, b = (x if element_type(x) == t else values(x).astype(np.float32)
            for x, t in zip((a, b), spec.operand_types))
    p, inputs = launch_inputs(spec, a, b, c=c, alpha=alpha, beta=beta, k_splits=k_splits)
    prog = program(spec, array_infos(inputs))
    out_shape = p.kernel_out_shape(k_splits)
    buffers = binding.bind(
        spec.input_names, inputs, signatures.shape_infos(spec), spec.output_names,
        [(out_shape, np.float32)] * len(spec.output_names), row_contiguous=spec.ensure_row_contiguous)
    outputs = dispatch(prog, buffers, p.grid(spec.block_m, spec.block_n, spec.threadgroup, k_splits),
                       spec.threadgroup, seed=seed, align_end=align_end, stats=stats, report=report)
    if outputs is None:
        return None
    out = np.frombuffer(outputs[0], dtype=np.float32).reshape(out_shape)
    if k_splits > 1:
        out = out.sum(axis=0, dtype=np.float32)
    return out.reshape(p.out_shape)


def checked(spec: KernelSpec, a: np.ndarray, b: np.ndarray, **kwargs):
    """``a @ b`` (None if a finding stopped the run) and the checker's report,
    findings and all (nothing raised)."""
    reports: list = []
    out = matmul(spec, a, b, report=reports, **kwargs)
    return out, reports[0]
