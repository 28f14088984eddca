"""Where the emulations (``fp16_emulated``, ``int8_emulated``) beat the 3xTF32
wgmma pipeline at float32 accuracy: the three, and cuBLAS SGEMM, on square and
LLM-sized products, in alternating rounds in one process.

    python benchmarks/emulation_crossover.py [--csv out.csv]

"wgmma" is matmul's kernel when the emulation is not chosen
(``kernel_choice.choose`` without it), so the comparison holds whichever of
them matmul picks; ``matmul`` is the op as it chooses. The rule in
mlx_sgemm.dispatch.kernel_choice (HALF_SPLIT_MIN_SIDE) comes from these rows.
Needs a Hopper GPU.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx

import mlx_sgemm
from mlx_sgemm.bench import accuracy, results, timing
from mlx_sgemm.bench.measure import sampled_error
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan

SQUARES = [(n, n, n) for n in (1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192)]
# (M tokens, N, K): a 7B model's projections at long prefill, and shapes with one short side.
LLM = [(8192, 14336, 4096), (8192, 4096, 14336), (16384, 4096, 4096), (2048, 14336, 4096),
       (8192, 8192, 2048), (2048, 8192, 8192)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    rows = []
    for m, n, k in SQUARES + LLM:
        a, b = accuracy.random_operands((m, k), (k, n))
        mx.eval(a, b)
        wgmma = kernel_choice.wgmma_launch("float32", plan(a.shape, b.shape))
        run = launcher.prepared(wgmma.spec, a.shape, b.shape, wgmma.k_splits)
        fns = {
            "mx.matmul": lambda a=a, b=b: mx.matmul(a, b),
            "wgmma (3xTF32)": lambda a=a, b=b, run=run: run(a, b, None, {}),
            "int8_emulated": lambda a=a, b=b: mlx_sgemm.int8_emulated(a, b),
            "fp16_emulated": lambda a=a, b=b: mlx_sgemm.fp16_emulated(a, b),
            "matmul": lambda a=a, b=b: mlx_sgemm.matmul(a, b),
        }
        medians = timing.alternating_medians(fns, rounds=3, repeats=args.repeats)
        first = len(rows)
        for name, seconds in medians.items():
            rows.append({"device": device.name(), "kernel": name, "precision": "float32", "M": m, "N": n,
                         "K": k, "us": round(seconds * 1e6, 1), "gflops": round(2.0 * m * n * k / seconds / 1e9, 1),
                         "x_cublas_sgemm": round(medians["mx.matmul"] / seconds, 3),
                         "x_wgmma": round(medians["wgmma (3xTF32)"] / seconds, 3),
                         "error": f"{sampled_error(fns[name](), a, b):.2e}"})
        results.write_table(rows[first:], None)
    results.write_table(rows, args.csv, echo=False)


if __name__ == "__main__":
    main()
