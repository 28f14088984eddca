"""What do bfloat16 operands and ``deterministic=True`` cost, next to the
default float32 ``matmul`` and to ``mx.matmul``?

    python benchmarks/dtype_and_deterministic_cost.py [--csv out.csv]

For a square product and three shapes of a 7B model's layers (``x @ W.T``: a
token, 8 tokens against the MLP's up projection, a 2048-token prefill), times
in alternating rounds in one process: ``mx.matmul`` in float32 (cuBLAS SGEMM),
``matmul``, ``matmul(deterministic=True)``, and with bfloat16 operands
``mx.matmul`` (cuBLAS's bf16 GEMM) and ``matmul`` (operands cast to float32
in MLX, the float32 product, rounded to bfloat16). Error is normwise against
float64 of the same operands. Needs a CUDA or Metal GPU.
"""

from __future__ import annotations

import argparse
import csv
import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx  # noqa: E402

import mlx_sgemm  # noqa: E402
from mlx_sgemm.bench import accuracy, timing  # noqa: E402
from mlx_sgemm.bench.measure import sampled_error  # noqa: E402
from mlx_sgemm.dispatch import device  # noqa: E402

SHAPES = [  # (M, N, K, B is W.T)
    (4096, 4096, 4096, False),
    (1, 4096, 4096, True),
    (8, 14336, 4096, True),
    (2048, 4096, 4096, True),
]


def operands(m, n, k, transposed):
    a, b = accuracy.random_operands((m, k), (n, k) if transposed else (k, n))
    return a, (b.T if transposed else b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", default=None)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    rows = []
    for m, n, k, transposed in SHAPES:
        a, b = operands(m, n, k, transposed)
        a16, b16 = a.astype(mx.bfloat16), b.astype(mx.bfloat16)
        mx.eval(a, b, a16, b16)
        fns = {
            ("mx.matmul", "float32"): lambda: mx.matmul(a, b),
            ("matmul", "float32"): lambda: mlx_sgemm.matmul(a, b),
            ("matmul deterministic", "float32"): lambda: mlx_sgemm.matmul(a, b, deterministic=True),
            ("mx.matmul", "bfloat16"): lambda: mx.matmul(a16, b16),
            ("matmul", "bfloat16"): lambda: mlx_sgemm.matmul(a16, b16),
        }
        medians = timing.alternating_medians(fns, rounds=3, repeats=args.repeats)
        base = {dt: medians[("mx.matmul", dt)] for dt in ("float32", "bfloat16")}
        shape = f"{m}x{n}x{k}" + (" W.T" if transposed else "")
        for (kernel, dtype), seconds in medians.items():
            x, y = (a16, b16) if dtype == "bfloat16" else (a, b)
            error = sampled_error(*(t.astype(mx.float32) for t in (fns[(kernel, dtype)](), x, y)))
            row = dict(device=device.name(), shape=shape, dtype=dtype, kernel=kernel,
                       us=round(seconds * 1e6, 2), tflops=round(timing.gflops(m, n, k, seconds) / 1e3, 2),
                       x_mx_matmul_same_dtype=round(base[dtype] / seconds, 3),
                       x_mx_matmul_float32=round(base["float32"] / seconds, 3), error=f"{error:.2e}")
            rows.append(row)
            print(" | ".join(str(v) for v in row.values()), flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
