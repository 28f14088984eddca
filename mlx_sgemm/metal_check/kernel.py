"""``metal_kernel``: ``mx.fast.metal_kernel``'s arguments, checked on the CPU.

::

    from mlx_sgemm import metal_check

    kernel = metal_check.metal_kernel(name="myexp", input_names=["inp"],
                                      output_names=["out"], source=source)
    outputs, report = kernel(inputs=[a], template=[("T", "float32")],
                             grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                             output_shapes=[a.shape], output_dtypes=[a.dtype])
    assert report.ok, report

Every argument means what it means to MLX (0.32): the kernel is built with the
signature MLX would write (:mod:`mlx_sgemm.build.signatures`), its inputs
bound as MLX binds them (:mod:`.binding`), and one ``dispatchThreads`` runs
on the CPU with every check on. Inputs are NumPy arrays (or anything
``np.asarray`` takes, MLX arrays and Python scalars too: a float is float32,
an int int32, a bool bool, as MLX converts them); dtypes may be NumPy dtypes,
MLX dtypes or names ("float16").
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from mlx_sgemm.build import signatures

from . import binding, runner, translation
from .findings import KernelError, Report

# The dtypes a kernel's arrays may have here: MLX's (signatures.METAL_TYPES)
# that Metal has and NumPy holds (no bfloat16 in NumPy; no float64 or
# complex64 in Metal).
ARRAY_DTYPES = ("float32", "float16", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64")


class CheckResult(NamedTuple):
    """The outputs (None when a finding stopped the run) and the report."""

    outputs: list[np.ndarray] | None
    report: Report


def dtype_name(dtype) -> str:
    """A dtype's name as MLX spells it: from NumPy ("float32", np.float16),
    MLX (mx.float32, which prints as "mlx.core.float32") or a string."""
    named = isinstance(dtype, str) or str(dtype).startswith("mlx.core.")
    text = str(dtype).removeprefix("mlx.core.") if named else dtype
    try:
        # NumPy has no bfloat16: MLX's name is kept as it is.
        text = text if text == "bfloat16" else np.dtype(text).name
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None
    text = "bool" if text == "bool_" else text
    if text not in signatures.METAL_TYPES:
        raise TypeError(f"not a dtype MLX knows: {dtype!r}")
    return text


def _array(x, name: str) -> np.ndarray:
    if isinstance(x, bool):
        return np.asarray(x, dtype=np.bool_)
    if isinstance(x, int):
        return np.asarray(x, dtype=np.int32)
    if isinstance(x, float):
        return np.asarray(x, dtype=np.float32)
    arr = np.asarray(x)
    if dtype_name(arr.dtype) not in ARRAY_DTYPES:
        raise TypeError(
            f"input {name!r}: {arr.dtype} arrays cannot be checked (MLX would hand the kernel "
            f"`{signatures.METAL_TYPES.get(dtype_name(arr.dtype), arr.dtype)}`, which Metal lacks "
            f"or NumPy cannot hold); use one of {', '.join(ARRAY_DTYPES)}")
    return arr


def _triple(value, what: str) -> tuple[int, int, int]:
    t = tuple(int(v) for v in value)
    if len(t) != 3 or min(t) < 1:
        raise ValueError(f"{what} must be three integers >= 1, got {value!r}")
    return t  # type: ignore[return-value]


def _template_arg(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return signatures.TypeArg(dtype_name(value))


@dataclasses.dataclass(frozen=True)
class KernelText:
    """A kernel as :func:`mlx_sgemm.build.signatures.metal_source` reads it:
    metal_kernel's arguments, and each call's template and output dtypes."""

    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    source: str
    header: str
    atomic_outputs: bool = False
    template: tuple = ()
    output_dtypes: tuple[str, ...] = ()

    def compiled_source(self) -> str:
        return self.source

    def compiled_header(self) -> str:
        return self.header


@dataclasses.dataclass(frozen=True)
class CheckedKernel:
    """What :func:`metal_kernel` returns; call it as MLX's kernel is called."""

    kernel: KernelText
    ensure_row_contiguous: bool
    files: translation.SourceFiles

    def __call__(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup,
                 template=None, init_value: float | None = None, verbose: bool = False,
                 stream=None, seed: int = 0) -> CheckResult:
        """Run one dispatch, checked. MLX's arguments (``stream`` is accepted and
        has no use here); ``seed`` picks the order threadgroups and threads run
        in (racecheck and initcheck do not depend on it; wrong results may)."""
        del stream
        k = self.kernel
        for given, names, what in ((inputs, k.input_names, "inputs"),
                                   (output_shapes, k.output_names, "output_shapes"),
                                   (output_dtypes, k.output_names, "output_dtypes")):
            if len(given) != len(names):
                raise ValueError(f"[metal_kernel] Expected `{what}` to have size {len(names)} "
                                 f"but got size {len(given)}.")
        arrays = [_array(x, n) for x, n in zip(inputs, k.input_names)]
        out_dtypes = tuple(dtype_name(d) for d in output_dtypes)
        for name, d in zip(k.output_names, out_dtypes):
            if d not in ARRAY_DTYPES:
                raise TypeError(f"output {name!r}: {d} cannot be checked; use one of "
                                f"{', '.join(ARRAY_DTYPES)}")
        shapes = [tuple(int(n) for n in s) for s in output_shapes]
        text = dataclasses.replace(
            k, template=tuple((str(n), _template_arg(v)) for n, v in (template or ())),
            output_dtypes=out_dtypes)
        infos = [signatures.ArrayInfo(dtype_name(a.dtype), a.ndim, a.size) for a in arrays]
        try:
            prog = translation.program(text, infos, self.files)
        except translation.Unsupported as e:
            raise KernelError("unsupported", 0, str(e)) from None
        if verbose:
            print(f"Generated source code for `{k.name}`:\n```\n{prog.mlx_source}\n```")
        buffers = binding.bind(
            k.input_names, arrays, signatures.shape_infos(text), k.output_names,
            [(s, np.dtype(d)) for s, d in zip(shapes, out_dtypes)],
            row_contiguous=self.ensure_row_contiguous, init_value=init_value)
        raw, report = runner.dispatch(prog, buffers, _triple(grid, "grid"),
                                      _triple(threadgroup, "threadgroup"), seed=seed)
        if raw is None:
            return CheckResult(None, report)
        outputs = [np.frombuffer(data, dtype=d).reshape(s).copy()
                   for data, s, d in zip(raw, shapes, out_dtypes)]
        return CheckResult(outputs, report)


def metal_kernel(
    name: str, input_names, output_names, source: str, header: str = "",
    ensure_row_contiguous: bool = True, atomic_outputs: bool = False, compile_options=None,
    *, source_path: str | None = None, header_path: str | None = None,
) -> CheckedKernel:
    """``mx.fast.metal_kernel``, for the CPU checker: the same arguments
    (``compile_options`` is accepted; the CPU computes IEEE results in every
    math mode). ``source_path`` and ``header_path`` name the files the source
    and header came from, for the report's lines."""
    del compile_options
    if not output_names:
        raise ValueError("[metal_kernel] Must specify at least one output.")
    text = KernelText(name, tuple(input_names), tuple(output_names), source, header, atomic_outputs)
    files = translation.SourceFiles(source_path or "source", header_path or "header")
    return CheckedKernel(text, ensure_row_contiguous, files)
