"""TF32 products of up to 128 rows one at a time: matmul (A's tiles rounded in
shared memory) against the same with A first rounded by tf32_round.cu (the pass
it took before), and mx.matmul (cuBLAS TF32), in one process."""
import os
os.environ["MLX_ENABLE_TF32"] = "1"
import statistics
import mlx.core as mx
import numpy as np
import mlx_sgemm
from mlx_sgemm.build import launcher
from mlx_sgemm.bench import timing, accuracy

SHAPES = [(32, 4096, 4096), (32, 14336, 4096), (32, 4096, 14336), (64, 4096, 4096), (128, 4096, 4096),
          (128, 14336, 4096), (128, 1024, 4096)]
for m, n, k in SHAPES:
    a, b = accuracy.random_operands((m, k), (k, n)); mx.eval(a, b)
    rnd = launcher.tf32_rounding(a.shape)
    s = mx.default_stream(mx.default_device())
    fns = {"matmul": lambda: mlx_sgemm.matmul(a, b, precision="tf32"),
           "pass + matmul": lambda: mlx_sgemm.matmul(rnd(a, s), b, precision="tf32"),
           "mx.matmul": lambda: mx.matmul(a, b)}
    same = mx.array_equal(fns["matmul"](), fns["pass + matmul"]()).item()
    rounds = timing.alternating_rounds(fns, rounds=9, repeats=8, calls=timing.ONE_AT_A_TIME)
    med = {name: statistics.median(v) for name, v in rounds.items()}
    print(f"{m}x{n}x{k}: matmul {med['matmul']*1e6:7.1f} us, pass + matmul {med['pass + matmul']*1e6:7.1f}, "
          f"mx.matmul {med['mx.matmul']*1e6:7.1f}; ratio {med['mx.matmul']/med['matmul']:.3f}x "
          f"(with the pass {med['mx.matmul']/med['pass + matmul']:.3f}x); same bits {same}", flush=True)
