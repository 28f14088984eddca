"""PyTorch profiler traces, as the GPU-timing scripts read them: PyTorch's
profiler (on the GPU machine) traces MLX's kernels through CUPTI too, and its
Chrome-format trace is a list of events ("cat" kernel, cuda_runtime, ...)."""

from __future__ import annotations

import json
import os
import tempfile


def trace_events(path: str | os.PathLike) -> list[dict]:
    """The events of a Chrome-format trace file."""
    with open(path) as f:
        return json.load(f)["traceEvents"]


def profiler_events(prof, path: str | os.PathLike | None = None) -> list[dict]:
    """The events a finished ``torch.profiler.profile`` recorded, by way of its
    Chrome trace, written to ``path`` (kept) or to a file of its own that goes
    once read."""
    if path is not None:
        prof.export_chrome_trace(str(path))
        return trace_events(path)
    with tempfile.TemporaryDirectory() as folder:
        written = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(written)
        return trace_events(written)
