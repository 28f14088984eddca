"""Where the emulations (``fp16_emulated``, ``int8_emulated``) beat the 3xTF32
wgmma pipeline at float32 accuracy: the three, and cuBLAS SGEMM, on square and
LLM-sized products, in alternating rounds in one process. ``--precision
tf32``: the float16 split's one-part form against the one-pass wgmma pipeline
and cuBLAS TF32.

    python benchmarks/emulation_crossover.py [--precision tf32] [--squares 4096 8192] [--csv out.csv]

"wgmma" is matmul's kernel when the emulation is not chosen
(``kernel_choice.choose`` without it), so the comparison holds whichever of
them matmul picks; ``matmul`` is the op as it chooses. The rules in
mlx_sgemm.dispatch.kernel_choice (HALF_SPLIT_MIN_SIDE, HALF_TF32_MIN_HARMONIC)
come from these rows. Needs a Hopper GPU.
"""

from __future__ import annotations

import argparse
import os


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--precision", choices=("float32", "tf32"), default="float32")
    parser.add_argument("--squares", type=int, nargs="+", default=[1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192],
                        help="the square sizes (the LLM shapes run too)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--csv", default=None)
    return parser.parse_args()


# Parsed before MLX is imported: the baseline, mx.matmul, is cuBLAS SGEMM with
# TF32 off (float32) and cuBLAS TF32 with it on.
ARGS = _arguments() if __name__ == "__main__" else None
os.environ.setdefault("MLX_ENABLE_TF32", "1" if ARGS is not None and ARGS.precision == "tf32" else "0")

import mlx.core as mx

import mlx_sgemm
from mlx_sgemm.bench import accuracy, results, timing
from mlx_sgemm.bench.measure import sampled_error
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan

# (M tokens, N, K): a 7B model's projections at long prefill, and shapes with one short side.
LLM = [(8192, 14336, 4096), (8192, 4096, 14336), (16384, 4096, 4096), (2048, 14336, 4096),
       (8192, 8192, 2048), (2048, 8192, 8192)]


def main(args: argparse.Namespace) -> None:
    precision = args.precision
    cublas, wgmma_name = (("x_cublas_tf32", "wgmma (TF32)") if precision == "tf32"
                          else ("x_cublas_sgemm", "wgmma (3xTF32)"))
    rows = []
    for m, n, k in [(n, n, n) for n in args.squares] + LLM:
        a, b = accuracy.random_operands((m, k), (k, n))
        mx.eval(a, b)
        wgmma = kernel_choice.wgmma_launch(precision, plan(a.shape, b.shape))
        run = launcher.prepared(wgmma.spec, a.shape, b.shape, wgmma.k_splits)
        fns = {
            "mx.matmul": lambda a=a, b=b: mx.matmul(a, b),
            wgmma_name: lambda a=a, b=b, run=run: run(a, b, None, {}),
            "fp16_emulated": lambda a=a, b=b: mlx_sgemm.fp16_emulated(a, b, precision=precision),
            "matmul": lambda a=a, b=b: mlx_sgemm.matmul(a, b, precision=precision),
        }
        if precision == "float32":
            fns["int8_emulated"] = lambda a=a, b=b: mlx_sgemm.int8_emulated(a, b)
        medians = timing.alternating_medians(fns, rounds=3, repeats=args.repeats)
        first = len(rows)
        for name, seconds in medians.items():
            rows.append({"device": device.name(), "kernel": name, "precision": precision, "M": m, "N": n,
                         "K": k, "us": round(seconds * 1e6, 1), "gflops": round(2.0 * m * n * k / seconds / 1e9, 1),
                         cublas: round(medians["mx.matmul"] / seconds, 3),
                         "x_wgmma": round(medians[wgmma_name] / seconds, 3),
                         "error": f"{sampled_error(fns[name](), a, b):.2e}"})
        results.write_table(rows[first:], None)
    results.write_table(rows, args.csv, echo=False)


if __name__ == "__main__":
    main(ARGS)
