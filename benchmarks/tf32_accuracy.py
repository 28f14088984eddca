"""TF32's accuracy, ours against cuBLAS's, on every shape of the shape suite
and at long K, on normal and on all-positive inputs.

    python benchmarks/tf32_accuracy.py --csv benchmarks/results/tf32-accuracy-DATE-DEVICE.csv \\
        [--inputs normal positive] [--long-k 4096 16384 32768]

For each shape of benchmarks/shape_suite.py (batched products: entry 0;
x @ W.T with W's transposed view) and 2048 x 2048 x K for each --long-k, the
error of ``matmul(precision="tf32")`` and of ``mx.matmul`` with
MLX_ENABLE_TF32=1 (cuBLAS's TF32; MLX reads the variable once, so it is set
here before MLX is imported) on the same operands, and the kernel matmul runs
(mlx_sgemm.bench.tf32_accuracy, which says how). Needs MLX's CUDA backend. No
timing: the shape suite at --precision tf32 times the same shapes.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

os.environ["MLX_ENABLE_TF32"] = "1"

sys.path.insert(0, str(Path(__file__).parent))
from shape_suite import SHAPES  # noqa: E402

from mlx_sgemm.bench import tf32_accuracy  # noqa: E402

LONG_K = (4096, 16384, 32768)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", nargs="+", default=list(tf32_accuracy.INPUTS), choices=tf32_accuracy.INPUTS)
    parser.add_argument("--long-k", nargs="*", type=int, default=list(LONG_K), help="2048 x 2048 x K for each")
    parser.add_argument("--csv", default=None)
    args = parser.parse_args(argv)

    import mlx.core as mx

    from mlx_sgemm.bench import measure, results
    from mlx_sgemm.dispatch import device

    if device.backend() != device.CUDA:
        print("TF32 is CUDA's: no CUDA backend here, nothing to measure")
        return 1
    shapes = list(SHAPES) + [((), 2048, 2048, k, False) for k in args.long_k]
    common = {"device": device.name(), "mlx_version": mx.__version__, "date": datetime.date.today().isoformat(),
              "commit": measure.source_commit()}
    print(f"{common['device']}, MLX {mx.__version__}: matmul(precision='tf32') against cuBLAS TF32")
    print(f"{'shape':>34s} {'inputs':>8s} {'kernel':>14s} {'ours':>9s} {'cuBLAS':>9s} {'x':>6s}")
    rows = []
    for measured in tf32_accuracy.each_error_row(shapes, args.inputs):  # printed as they come
        row = {**common, **measured}
        rows.append(row)
        label = (f"{row['batch'] + ' x ' if row['batch'] else ''}{row['M']}x{row['N']}x{row['K']}"
                 f"{' W.T' if row['b_transposed_view'] else ''}")
        print(f"{label:>34s} {row['inputs']:>8s} {row['kernel']:>14s} {row['error']:9.2e} "
              f"{row['mx_matmul_error']:9.2e} {row['error_over_cublas']:6.2f}", flush=True)
    worst = max(rows, key=lambda r: r["error_over_cublas"])
    print(f"{sum(r['error_over_cublas'] <= 1.0 for r in rows)}/{len(rows)} at or below cuBLAS TF32's error; "
          f"highest {worst['error_over_cublas']:.2f} ({worst['inputs']} {worst['M']}x{worst['N']}x{worst['K']}, "
          f"{worst['kernel']})")
    results.write_table(rows, args.csv, echo=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
