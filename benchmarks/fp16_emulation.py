"""What the float16 split (``mlx_sgemm.fp16_emulated``) costs, phase by phase,
and how accurate it is, next to cuBLAS SGEMM in the same process.

    python benchmarks/fp16_emulation.py [--sizes 4096 8192] [--csv out.csv]
    python benchmarks/fp16_emulation.py --accuracy [--csv out.csv]

Timing: ``mx.matmul`` in float32 (cuBLAS SGEMM, MLX_ENABLE_TF32=0),
``matmul`` and ``fp16_emulated`` in alternating rounds, then each phase alone
on evaluated inputs (line statistics, the splits of A and of B^T,
the fallback's tiles, the products) and the products' float16 rate (3 products
of 2 M N K each, padded tiles), against cuBLAS's FP16 GEMM on the same FLOPs
(``mx.matmul`` on float16 operands of M x 3K and 3K x N: the three products
summed are one product over K three times). ``--accuracy``: normwise and worst
componentwise errors against float64 next to cuBLAS SGEMM's, on normal,
positive, GEMMul8's (rand - 0.5) exp(phi randn) and 1e30-next-to-1e-30
inputs, K = 1, 31, 4096, 65536, and what computed them (the split, the
float32 fallback, or the split with the share of outputs the fallback gave,
those of lines too wide for it). Needs a Hopper GPU.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402

import mlx_sgemm  # noqa: E402
from mlx_sgemm.bench import accuracy, results, timing  # noqa: E402
from mlx_sgemm.bench.measure import sampled_error  # noqa: E402
from mlx_sgemm.dispatch import device, kernel_choice  # noqa: E402
from mlx_sgemm.emulation import gpu, half_split  # noqa: E402

FP16_GEMM = "cuBLAS FP16 GEMM, K three times (mx.matmul, float16)"
KINDS = ("normal", "positive", "phi0.5", "phi1", "phi2", "phi4", "1e30 next to 1e-30")


def accuracy_table(path: str | None) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for k in (1, 31, 4096, 65536):
        for kind in KINDS:
            a, b = accuracy.emulation_inputs(kind, 256, 256, k, rng)
            x, y = mx.array(a), mx.array(b)
            rows_taken, cols_taken = half_split.lines_taken(x, y)
            taken = float(np.outer(rows_taken, cols_taken).mean())
            computed_by = ("fp16_emulated" if taken == 1 else "tile_threads (fallback)" if taken == 0
                           else f"fp16_emulated, {1 - taken:.0%} of the outputs by tile_threads (fallback)")
            rows.append(dict(device=device.name(), K=k, inputs=kind, computed_by=computed_by,
                             **accuracy.errors_beside_cublas(mlx_sgemm.fp16_emulated(x, y), a, b)))
            results.write_table(rows[-1:], None)
    results.write_table(rows, path, echo=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--accuracy", action="store_true", help="the accuracy table instead of the timings")
    args = parser.parse_args()
    if args.accuracy:
        accuracy_table(args.csv)
        return
    rows = []
    for size in args.sizes:
        a, b = accuracy.random_operands((size, size), (size, size))
        mx.eval(a, b)
        fns = {"mx.matmul": lambda: mx.matmul(a, b), "matmul": lambda: mlx_sgemm.matmul(a, b),
               "fp16_emulated": lambda: mlx_sgemm.fp16_emulated(a, b)}
        medians = timing.alternating_medians(fns, rounds=3, repeats=args.repeats)
        bt = b.T
        whole_k = half_split.WHOLE_K
        a_read, b_read = gpu.line_stats(a, bt, None, whole_k)
        products = kernel_choice.half_split_spec("float32", size, size)

        def split_operands():  # both splits, one launch
            return half_split.split_both(a, bt, a_read, b_read, products.block_m, products.block_n)

        ah, bh, a_stats, b_stats = split_operands()
        choice = half_split._choice()
        direct = gpu.fallback_product(a, b, choice, a_stats, b_stats)
        a3, b3 = accuracy.random_operands((size, 3 * size), (3 * size, size))
        a3, b3 = a3.astype(mx.float16), b3.astype(mx.float16)
        mx.eval(a_read, b_read, a_stats, b_stats, choice, ah, bh, direct, a3, b3)
        phases = {
            # A's rows are contiguous: its split reads them whole and takes
            # their statistics itself, and line_stats writes nothing for them.
            "phase: line statistics (A: none; B^T)": lambda: mx.concatenate(
                gpu.line_stats(a, bt, None, whole_k), 1),
            "phase: split of A (with its statistics) and of B^T, one launch": split_operands,
            "phase: fallback tiles (none here)": lambda: gpu.fallback_product(a, b, choice, a_stats, b_stats),
            "phase: products (wgmma, 3 float16 products)": lambda: half_split._products(
                ah, bh, a_stats, b_stats, direct, size, size, size, products),
            FP16_GEMM: lambda: mx.matmul(a3, b3),
        }
        medians.update(timing.alternating_medians(phases, rounds=3, repeats=args.repeats))
        tiles_m, tiles_n = -(-size // products.block_m), -(-size // products.block_n)
        for name, seconds in medians.items():
            row = dict(device=device.name(), kernel=name, precision="float32", M=size, N=size, K=size,
                       us=round(seconds * 1e6, 1), gflops=round(2.0 * size**3 / seconds / 1e9, 1),
                       x_cublas_sgemm=round(medians["mx.matmul"] / seconds, 3), error="", note="")
            if name in fns:
                row["error"] = f"{sampled_error(fns[name](), a, b):.2e}"
            if name.startswith("phase: products"):
                padded = 3 * 2.0 * tiles_m * products.block_m * tiles_n * products.block_n * size
                row["note"] = (f"{padded / seconds / 1e12:.0f} float16 TFLOP/s; "
                               f"{medians[FP16_GEMM] / seconds:.2f}x cuBLAS's FP16 GEMM on the same FLOPs")
            if name == FP16_GEMM:
                row["note"] = f"{3 * 2.0 * size**3 / seconds / 1e12:.0f} float16 TFLOP/s"
            rows.append(row)
            results.write_table([row], None)
    results.write_table(rows, args.csv, echo=False)


if __name__ == "__main__":
    main()
