"""TF32 products of 512-3072 rows: matmul's 256-row blocks (A rounded by a
pass, then the TMA) against 128-row blocks (A by cp.async, rounded in shared
memory by the producer: no pass), compiled, one at a time and independent,
beside cuBLAS TF32; bits of both against a model of operands rounded to
nearest TF32 are the tests' business: here all-positive errors."""
import statistics, time
import numpy as np
import mlx.core as mx
from mlx_sgemm import ops
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import Plan
from mlx_sgemm.build.launcher import plan

captured = []
orig_prepared = launcher.prepared
def spy(spec, a_shape, b_shape, k_splits):
    captured.append((spec, a_shape, b_shape, k_splits))
    return orig_prepared(spec, a_shape, b_shape, k_splits)
launcher.prepared = spy

SHAPES = [(512, 4096, 4096, False), (512, 4096, 14336, False), (512, 14336, 4096, False), (2048, 4096, 4096, False),
          (2048, 1024, 4096, False), (2048, 2048, 2048, False), (2048, 4096, 14336, False), (3072, 3072, 3072, False),
          (1024, 4096, 4096, False)]

def one_at_a_time(f, n=15):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); mx.eval(f()); mx.synchronize(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts)

def independent(f, n=10, reps=5):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); mx.eval([f() for _ in range(n)]); mx.synchronize(); ts.append((time.perf_counter() - t0) / n)
    return statistics.median(ts)

narrow = kernel_choice._hopper("tf32", 128)
for M, N, K, bt in SHAPES:
    a = mx.random.normal((M, K)); w = mx.random.normal((N, K)) if bt else mx.random.normal((K, N))
    b = w.T if bt else w
    pos_a, pos_b = mx.abs(a), mx.abs(b)
    mx.eval(a, w, pos_a, pos_b)
    captured.clear(); ops._compiled.cache_clear(); ops._calls.clear()
    mx.eval(ops.matmul(a, b, precision="tf32"))
    if not captured:
        print(f"== {M}x{N}x{K}: no launch captured, skipped", flush=True); continue
    spec, a_shape, b_shape, k_splits = captured[-1]
    if dict(spec.template).get("BM") != 256:
        print(f"== {M}x{N}x{K}: not a 256-row block ({spec.name}), skipped", flush=True); continue
    p = plan(a_shape, b_shape)
    nk = kernel_choice.k_splits(device.CUDA, narrow, p)
    runs = {"256 rows+pass": orig_prepared.__wrapped__(spec, a_shape, b_shape, k_splits),
            "128 rows": orig_prepared.__wrapped__(narrow, a_shape, b_shape, nk)}
    a64, b64 = np.array(pos_a, dtype=np.float64), np.array(pos_b, dtype=np.float64)
    ref64 = a64 @ b64
    def err(o): return float(np.linalg.norm(np.array(o) - ref64) / np.linalg.norm(ref64))
    errs = {k: err(r(pos_a, pos_b, None, {})) for k, r in runs.items()}
    print(f"== {M}x{N}x{K} k_splits {k_splits} / {nk}; all-positive error " + ", ".join(f"{k} {v:.3e}" for k, v in errs.items())
          + f", cuBLAS TF32 {err(mx.matmul(pos_a, pos_b)):.3e}", flush=True)
    fns = {name: (lambda c=mx.compile(lambda x, y, run=run: run(x, y, None, {})): c(a, b)) for name, run in runs.items()}
    fns["cublas_tf32"] = lambda: mx.matmul(a, b)
    for f in fns.values():
        for _ in range(3): mx.eval(f())
    one = {k: [] for k in fns}; ind = {k: [] for k in fns}
    for r in range(7):
        for k, f in fns.items():
            one[k].append(one_at_a_time(f)); ind[k].append(independent(f))
    for k in fns:
        o, i = statistics.median(one[k]), statistics.median(ind[k])
        print(f"  {k:14s} one at a time {o*1e6:8.1f} us ({statistics.median(one['cublas_tf32'])/o:.3f}x)  "
              f"independent {i*1e6:8.1f} us ({statistics.median(ind['cublas_tf32'])/i:.3f}x)", flush=True)
