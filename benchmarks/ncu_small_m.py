"""Five calls of mx.matmul (cuBLAS SGEMM) and five of matmul on one small product,
each evaluated alone, for Nsight Compute: kernel time and DRAM bytes per call.

    ncu --cache-control none --clock-control none \
        --metrics dram__bytes_read.sum,gpu__time_duration.sum \
        python benchmarks/ncu_small_m.py 4 14336 4096
        python benchmarks/ncu_small_m.py 1 4096 4096 T     # x @ W.T
        python benchmarks/ncu_small_m.py 1 14336 4096 T bfloat16   # operands' dtype
        python benchmarks/ncu_small_m.py 1 14336 4096 T bfloat16 half_gemv:WARPS=8,MIN_BLOCKS=2  # and a variant

(M N K, T for B as a transposed view, the operands' dtype, float32 unless named,
and half_gemv:NAME=VALUE,... (cuda_half_gemv's keywords) for five calls of that half_gemv
instance too, launched directly; one half row against W.T is also a model layer's
call five times, whose kernel is half_gemv_one_row.) The question: is a small product's
gap to cuBLAS in the kernel or around it? (docs/performance-log.md, "H100's
4x14336x4096 and B's L2 policy".) CUDA only, under ncu on the GPU machine.
"""
import os
import sys

import mlx.core as mx

from mlx_sgemm import ops
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher, specs
from ncu_half_gemv import keywords  # the variants' NAME=VALUE,... as ncu_half_gemv.py passes them

os.environ["MLX_ENABLE_TF32"] = "0"
m, n, k = [int(x) for x in sys.argv[1:4]]
transposed = "T" in sys.argv[4:]
dtype = next((getattr(mx, x) for x in sys.argv[4:] if x != "T" and ":" not in x), mx.float32)
variants = [x.partition(":")[2] for x in sys.argv[4:] if x.startswith("half_gemv:")]
a, w = (x.astype(dtype) for x in accuracy.random_operands((m, k), (n, k) if transposed else (k, n)))
mx.eval(a, w)
b = mx.swapaxes(w, -1, -2) if transposed else w
for _ in range(5): mx.eval(mx.matmul(a, b))
for _ in range(5): mx.eval(ops.matmul(a, b))
if transposed and m == 1 and dtype != mx.float32:  # a model layer's token: half_gemv_one_row
    layer = ops.layer_product("matmul")
    for _ in range(5): mx.eval(layer(a, w))
for variant in variants:
    spec = specs.cuda_half_gemv(str(dtype).rpartition(".")[2], **keywords(variant))
    for _ in range(5): mx.eval(launcher.launch(spec, a, b))
