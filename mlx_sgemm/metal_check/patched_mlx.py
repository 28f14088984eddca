"""Any library's own ``mx.fast.metal_kernel`` calls, run checked on the CPU.

::

    from mlx_sgemm.metal_check import checked_metal_kernels

    with checked_metal_kernels(reload=["mlx_lm.kernels.qk_norm"]) as log:
        from mlx_lm.kernels import qk_norm
        q, k = qk_norm(qkvg, n_heads=4, n_kv_heads=2, head_dim=64, eps=1e-6, query_scale=0.125)
    log.assert_ok()  # every dispatch checked clean; else the reports

Inside the block ``mx.fast.metal_kernel`` returns a kernel that MLX's callers
cannot tell from MLX's own: called with ``mx.array`` inputs (and MLX dtypes in
``template`` and ``output_dtypes``), it returns a list of ``mx.array``
outputs. Each call is one checked dispatch (:func:`.kernel.metal_kernel`);
its report goes into the log. ``mx.metal.is_available()`` answers True and
``mx.default_device()`` the GPU, as on a Mac: libraries build and call their
Metal kernels only where they do (mlx-lm's kernel factories return None
otherwise, and its losses check the default device). MLX's own operations
still run on the CPU: only what Python code asks of these two changes.

Libraries often build their kernels when a module is imported: ``reload``
names the modules to import anew inside the block (their kernels are then
checked ones) and once more on the way out (MLX's again).

Where a kernel's ``source`` string appears verbatim in the Python file that
called ``metal_kernel`` (a triple-quoted string), the report names that
file's lines; otherwise the lines of the string itself ("the source of k
(built in file.py):3").
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from . import translation
from .findings import Report
from .kernel import CheckedKernel, metal_kernel


class FindingsError(AssertionError):
    """A dispatch whose checks found something: the readable report is the message."""


@dataclasses.dataclass
class Dispatch:
    """One checked call of a kernel made inside the block."""

    kernel: str
    report: Report


@dataclasses.dataclass
class CheckLog:
    """The checked dispatches made inside a :func:`checked_metal_kernels` block."""

    dispatches: list[Dispatch] = dataclasses.field(default_factory=list)
    # Kernels built inside the block, by name (whether called or not).
    built: list[str] = dataclasses.field(default_factory=list)

    def reports(self, kernel: str | None = None) -> list[Report]:
        return [d.report for d in self.dispatches if kernel is None or d.kernel == kernel]

    def assert_ok(self) -> None:
        """Raise :class:`FindingsError` with every failing report's text."""
        bad = [str(d.report) for d in self.dispatches if not d.report.ok]
        if bad:
            raise FindingsError("\n\n".join(bad))


def _source_origin(source: str, what: str, caller: Path | None) -> tuple[str, int]:
    """What to name a kernel's lines by, and the line its text starts at: the
    caller's file where the text stands in it verbatim (once), else the
    string itself (``what``: "the source of k", built in the caller's file)."""
    text = ""
    if caller is not None:
        try:
            text = caller.read_text()
        except OSError:
            pass
    at = text.find(source) if source.strip() else -1
    if at < 0 or text.find(source, at + 1) >= 0:
        return f"{what} (built in {caller.name if caller else 'an unknown file'})", 1
    return str(caller), text.count("\n", 0, at) + 1


class MLXCheckedKernel:
    """``mx.fast.metal_kernel``'s result, for MLX callers: mx.array in, mx.array out."""

    def __init__(self, checked: CheckedKernel, log: CheckLog, *, raise_on_findings: bool):
        self.checked = checked
        self.log = log
        self.raise_on_findings = raise_on_findings

    def __call__(self, *, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None,
                 init_value=None, verbose=False, stream=None):
        import mlx.core as mx
        import numpy as np

        arrays = [np.asarray(x) if isinstance(x, mx.array) else x for x in inputs]
        outputs, report = self.checked(
            inputs=arrays, output_shapes=output_shapes, output_dtypes=output_dtypes, grid=grid,
            threadgroup=threadgroup, template=template, init_value=init_value, verbose=verbose,
            stream=stream)
        self.log.dispatches.append(Dispatch(self.checked.kernel.name, report))
        if outputs is None or (self.raise_on_findings and not report.ok):
            raise FindingsError(str(report))
        return [mx.array(o) for o in outputs]


@contextlib.contextmanager
def checked_metal_kernels(*, reload: Sequence[str] = (), raise_on_findings: bool = False
                          ) -> Iterator[CheckLog]:
    """``mx.fast.metal_kernel`` returns checked kernels inside the block (see the
    module's documentation). With ``raise_on_findings`` a dispatch with findings
    raises :class:`FindingsError`; otherwise its report is only logged (a run
    that could not finish raises either way: there are no outputs to return)."""
    import mlx.core as mx

    log = CheckLog()
    originals = (mx.fast.metal_kernel, mx.metal.is_available, mx.default_device)

    def checked(name, input_names, output_names, source, header="", ensure_row_contiguous=True,
                atomic_outputs=False, **kwargs):
        frame = inspect.currentframe().f_back
        caller = Path(frame.f_code.co_filename) if frame is not None else None
        body_path, body_first = _source_origin(source, f"the source of {name}", caller)
        header_path, header_first = _source_origin(header, f"the header of {name}", caller)
        kernel = metal_kernel(name, input_names, output_names, source, header,
                              ensure_row_contiguous, atomic_outputs, **kwargs)
        files = translation.SourceFiles(body_path, header_path, body_first, header_first)
        log.built.append(name)
        return MLXCheckedKernel(dataclasses.replace(kernel, files=files), log,
                                raise_on_findings=raise_on_findings)

    def reload_all() -> None:
        for module in reload:
            if module in sys.modules:
                importlib.reload(sys.modules[module])
            else:
                importlib.import_module(module)

    gpu = mx.Device(mx.gpu)
    mx.fast.metal_kernel = checked
    mx.metal.is_available = lambda: True
    mx.default_device = lambda: gpu
    try:
        reload_all()
        yield log
    finally:
        mx.fast.metal_kernel, mx.metal.is_available, mx.default_device = originals
        reload_all()


__all__ = ["CheckLog", "Dispatch", "FindingsError", "MLXCheckedKernel", "checked_metal_kernels"]
