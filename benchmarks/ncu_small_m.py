"""Five calls of mx.matmul (cuBLAS SGEMM) and five of matmul on one small product,
each evaluated alone, for Nsight Compute: kernel time and DRAM bytes per call.

    ncu --cache-control none --clock-control none \
        --metrics dram__bytes_read.sum,gpu__time_duration.sum \
        python benchmarks/ncu_small_m.py 4 14336 4096

(M N K; benchmarks/NOTES.md, session 6: why the shape suite's loop flatters
cuBLAS on this shape.) CUDA only.
"""
import os, sys
os.environ["MLX_ENABLE_TF32"] = "0"
import mlx.core as mx
from mlx_sgemm import accuracy, ops
m, n, k = [int(x) for x in sys.argv[1:4]]
a, b = accuracy.random_operands((m, k), (k, n)); mx.eval(a, b)
for _ in range(5): mx.eval(mx.matmul(a, b))
for _ in range(5): mx.eval(ops.matmul(a, b))
