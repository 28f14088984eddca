"""After the autotuner's mixed launches (TMA pairs among them), are later products right,
and does the driver report a sticky error? argv[1]: TMA of the tall TF32 spec.

Needs ../tma-pairs.patch applied (TMA = 2). On an H200 (session 9) with MLX's CUDA
graphs on (the default), products of every kernel went wrong after a TMA = 2
launch (7x5x3: error ~1, no NaN, cuCtxSynchronize 0); with MLX_USE_CUDA_GRAPHS=0
all 48 products were right. MLX updates a cached graph's kernel nodes in place
when the graphs' node keys match, and a custom kernel's cluster shape (here
__cluster_dims__, compiled in) is not in the key (benchmarks/NOTES.md, session 9).
"""
import ctypes
import os
import sys

import mlx.core as mx
import numpy as np

import mlx_sgemm
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import kernel_choice, tuning_cache

drv = ctypes.CDLL("libcuda.so.1")
def ctx(label):
    mx.synchronize()
    r = drv.cuCtxSynchronize()
    print(f"[{label}] cuCtxSynchronize -> {r}", flush=True)
tma = int(sys.argv[1])
kernel_choice._HOPPER_TF32_TALL = specs.cuda_wgmma("matmul_tf32_wgmma", SPLIT=False, BM=256, IN_FLIGHT=True, LOOKAHEAD=1, TMA=tma)
kernel_choice._hopper.cache_clear()
os.environ[tuning_cache.CACHE_ENV] = f"/tmp/autotune-mixed-{tma}.json"
ctx("start")
def check(m, n, k, precision, label):
    x, y = accuracy.random_operands((m, k), (k, n))
    c = mlx_sgemm.matmul(x, y, precision=precision); mx.eval(c)
    e = accuracy.relative_error(np.array(c), np.array(x), np.array(y))
    nan = bool(np.isnan(np.array(c)).any())
    flag = "BAD" if nan or e > 2**-10 else "ok"
    print(f"  {flag} {label} {m}x{n}x{k} {precision}: err {e:.2e} nan {nan}", flush=True)
for shape in [(300, 500, 2048), (1000, 1000, 1000), (2048, 256, 4096), (513, 4100, 96)]:
    m, n, k = shape
    a, b = accuracy.random_operands((m, k), (k, n))
    r = mlx_sgemm.autotune(a, b, precision="tf32", repeats=3)
    print("autotune", shape, "choice", r["choice"], flush=True)
    ctx(f"after autotune {shape}")
    for s in [(7, 5, 3), (1, 7, 36), (33, 65, 127), (300, 500, 2048), (1000, 1000, 1000), (257, 260, 96)]:
        for prec in ("float32", "tf32"):
            check(*s, prec, "after")
ctx("end")
