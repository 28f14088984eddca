"""matmul(precision="tf32") against cuBLAS's TF32 on the TF32 pipeline's shapes,
independent calls (the kernels' cost, not a call's), in one process.

    python benchmarks/tf32_side_by_side.py LABEL [--rounds 2] [--repeats 10]

Prints a line a shape: LABEL, the shape (T: B a transposed view), both median
times in us and cuBLAS's over ours. To weigh a change to the pipeline, run it
in turns in a checkout of each version of the code: the ratio to cuBLAS, timed
beside it in the same process, is what compares across processes
(benchmarks/results/tf32-rounding-*.csv was recorded so). MLX_ENABLE_TF32=1
is set before MLX is imported (MLX reads it once). Needs MLX's CUDA backend.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ["MLX_ENABLE_TF32"] = "1"

# (M, N, K, B a transposed view): the shape suite's products the one-pass
# pipeline (tile_wgmma) takes at TF32, and squares up to the split's bound.
SHAPES = ((2048, 2048, 2048, False), (2048, 4096, 4096, False), (2048, 4096, 4096, True), (512, 4096, 4096, False),
          (128, 14336, 4096, False), (32, 4096, 4096, False), (32, 14336, 4096, False), (3072, 3072, 3072, False))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("label")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)

    import mlx.core as mx

    import mlx_sgemm
    from mlx_sgemm.bench import timing
    from mlx_sgemm.dispatch import device

    if device.backend() != device.CUDA:
        print("TF32 is CUDA's: no CUDA backend here")
        return 1
    for m, n, k, transposed in SHAPES:
        a = mx.random.normal((m, k))
        b = mx.random.normal((n, k)).T if transposed else mx.random.normal((k, n))
        mx.eval(a, b)
        med = timing.alternating_medians({"ours": lambda: mlx_sgemm.matmul(a, b, precision="tf32"),
                                          "cublas": lambda: mx.matmul(a, b)},
                                         rounds=args.rounds, repeats=args.repeats, calls=timing.INDEPENDENT)
        print(f"{args.label} {m}x{n}x{k}{'T' if transposed else ' '} ours {med['ours'] * 1e6:8.1f} "
              f"cublas {med['cublas'] * 1e6:8.1f} ratio {med['cublas'] / med['ours']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
