"""One benchmark session, shared by the command line and the notebook: measure
live on a GPU, or load the newest recorded run where there is none."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SIZES = (256, 512, 1024, 2048, 4096, 8192)


@dataclass
class Run:
    rows: list[dict]
    recorded: bool  # True: loaded from benchmarks/results, not measured now
    note: str  # what the rows are, for a person
    peak_gflops: float | None
    bandwidth_gbs: float | None
    csv: Path | None = None


def collect(
    sizes=DEFAULT_SIZES, shapes=(), kernels=None, precisions=None, repeats: int = 20,
    peak_gflops=None, bandwidth=None, out: Path = Path("outputs"),
    force_recorded: bool = False, progress: bool = True,
) -> Run:
    # cuBLAS's float32 baseline (mx.matmul in this process) needs TF32 off, and
    # MLX reads the switch once, at its first product: set it before that.
    os.environ.setdefault("MLX_ENABLE_TF32", "0")
    from ..dispatch import device
    from . import measure, peaks, results

    if force_recorded or device.backend() == device.CPU_FALLBACK:
        path = results.newest_recorded()
        why = ("Recorded results requested" if force_recorded else
               "No GPU: MLX on this machine has neither a Metal nor a CUDA backend, so the "
               "kernels cannot run here")
        if path is None:
            raise FileNotFoundError(f"{why}, and no recorded results were found (benchmarks/results/bench-*.csv)")
        rows = results.read_csv(path)
        found = peaks.lookup(rows[0]["device"])
        note = (f"{why}. Showing the newest run recorded on a real GPU: {path.name} "
                f"({rows[0]['device']}, MLX {rows[0]['mlx_version']}, {rows[0]['date']}).")
        return Run(rows, True, note, peak_gflops or found.fp32_gflops,
                   bandwidth or found.bandwidth_gbs, path)
    peak = measure.device_peak(peak_gflops, bandwidth)
    shapes = [(s, s, s) for s in sizes] + [tuple(s) for s in shapes]
    rows = measure.as_dicts(measure.measure(
        shapes, list(kernels or measure.KERNELS), list(precisions or measure.PRECISIONS),
        repeats, peak, progress))
    path = results.write_csv(rows, out / f"bench-{datetime.date.today().isoformat()}.csv")
    peak_text = f"{peak.fp32_gflops:,.0f} GFLOP/s" if peak.fp32_gflops else "unknown"
    note = (f"Live run on {device.name()} ({device.backend()}); FP32 peak {peak_text} "
            f"({peak.source}). Results written to {path}.")
    return Run(rows, False, note, peak.fp32_gflops, peak.bandwidth_gbs, path)
