import os, sys
os.environ["MLX_ENABLE_TF32"] = "0"
import mlx.core as mx
import mlx_sgemm
n = int(sys.argv[1])
a = mx.random.normal((n, n)); b = mx.random.normal((n, n)); mx.eval(a, b)
for _ in range(3): mx.eval(mlx_sgemm.tile_threads(a, b))
for _ in range(3): mx.eval(mx.matmul(a, b))
