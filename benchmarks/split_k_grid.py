"""Every tile_wgmma block height x K split on the shape suite's mid shapes, each
a compiled launch, next to mx.matmul: which block height and K split is
fastest for products of few output tiles?

Its timing evaluates many independent calls together, which the GPU may run at
once, so a product of few tiles looks cheaper than it is one at a time: these
figures had split-K limited to 16 tiles, which one-at-a-time timing overturned
(docs/performance-log.md, "Split-K revisited with compiled calls";
kernel_choice.k_splits).

    python benchmarks/split_k_grid.py float32
    python benchmarks/split_k_grid.py tf32

Prints one line per shape: mx.matmul's time, the heuristic's choice, and
"BM<height>/<splits>:<us>" for heights up to twice the rows of C and splits
1, 2, 4, 8, 16. CUDA on Hopper only.
"""

import os
import sys

import mlx.core as mx  # noqa: E402

from mlx_sgemm.bench import accuracy, timing
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan  # noqa: E402

PRECISION = sys.argv[1] if len(sys.argv) > 1 else "float32"
os.environ["MLX_ENABLE_TF32"] = "1" if PRECISION == "tf32" else "0"  # read once, at import

SHAPES = [(128, 1024, 4096), (32, 4096, 4096), (128, 4096, 4096), (512, 4096, 4096),
          (32, 4096, 14336), (128, 4096, 14336)]


def main() -> int:
    if device.backend() != device.CUDA or not device.has_wgmma():
        print("needs MLX's CUDA backend on a Hopper GPU")
        return 1
    for m, n, k in SHAPES:
        a, b = accuracy.random_operands((m, k), (k, n))
        mx.eval(a, b)
        base = timing.median_seconds(lambda: mx.matmul(a, b))
        how = kernel_choice.heuristic(device.CUDA, PRECISION, plan(a.shape, b.shape))
        out = [f"{m}x{n}x{k} mx {base * 1e6:6.1f} | heuristic BM{how.spec.block_m}/{how.k_splits}"]
        for bm in kernel_choice._WGMMA_ROWS[PRECISION]:
            if bm > 2 * max(m, 32):
                continue
            spec = kernel_choice._hopper(PRECISION, bm)
            for s in (1, 2, 4, 8, 16):
                f = mx.compile(lambda x, y, spec=spec, s=s: launcher.launch(spec, x, y, k_splits=s))
                t = timing.median_seconds(lambda: f(a, b))
                out.append(f"BM{bm}/{s}:{t * 1e6:.1f}")
        print(" ".join(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
