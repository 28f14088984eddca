"""One TF32 8192^3 product of matmul's kernel and one of cuBLAS's (mx.matmul,
TF32), for Nsight Compute to put side by side: where does cuBLAS's TF32 kernel
still gain on ours? (docs/performance-log.md, "TF32 against cuBLAS under Nsight
Compute: a persistent, TMA-fed kernel"). CUDA on Hopper only:

    ncu --clock-control none --kernel-name regex:"custom_kernel|sm90|xmma|cutlass" \\
        --launch-skip 2 --launch-count 2 --section SpeedOfLight --section WarpStateStats \\
        --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \\
        python benchmarks/ncu_tf32.py

Each runs twice: the first launch of each compiles or warms up (skipped above).
"""

import os
import sys

import mlx.core as mx  # noqa: E402

from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan  # noqa: E402

os.environ["MLX_ENABLE_TF32"] = "1"  # mx.matmul's TF32 (read once, at import)


def main(n: int = 8192) -> int:
    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend")
        return 1
    a, b = accuracy.random_operands((n, n), (n, n))
    mx.eval(a, b)
    how = kernel_choice.heuristic(device.CUDA, "tf32", plan(a.shape, b.shape))
    print(how.key, flush=True)
    for _ in range(2):
        mx.eval(launcher.launch(how.spec, a, b, k_splits=how.k_splits))
        mx.eval(mx.matmul(a, b))
    mx.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
