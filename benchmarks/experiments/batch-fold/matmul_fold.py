"""matmul of a batch of rows against one W: folded into one product (now)
against a batch of products (before, the fold turned off), and mx.matmul;
one product at a time and independent calls, alternating rounds."""
import statistics, time
import numpy as np
import mlx.core as mx
from mlx_sgemm import ops

fold = ops.folded_rows
CASES = [  # (x shape, W shape, dtype, transposed view)
    ((4, 1, 4096), (14336, 4096), mx.bfloat16, True),
    ((8, 1, 4096), (14336, 4096), mx.bfloat16, True),
    ((4, 1, 4096), (4096, 14336), mx.bfloat16, False),
    ((8, 1, 4096), (4096, 4096), mx.float16, True),
    ((4, 1, 4096), (14336, 4096), mx.float32, True),
    ((4, 16, 4096), (4096, 4096), mx.bfloat16, True),
    ((8, 64, 4096), (4096, 4096), mx.float32, True),
]

def forget():
    ops._compiled.cache_clear(); ops._route.cache_clear(); ops._calls.clear()

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

for xs, ws, dt, transposed in CASES:
    x = mx.random.normal(xs).astype(dt); w = mx.random.normal(ws).astype(dt)
    b = w.T if transposed else w
    mx.eval(x, w)
    # Each way's product made once, in its own state: a compiled function per shape pair.
    forget(); ops.folded_rows = lambda a, b: tuple(a)
    before_fn = ops._compiled(ops._DEFAULT_CHOICE, "cuda", None, True, False, x.shape, b.shape,
                              *ops._call_state(), ops.device.current_stream(), dtypes=(dt, dt))
    before = np.array(before_fn(x, b).astype(mx.float32))
    ops.folded_rows = fold; forget()
    now = np.array(ops.matmul(x, b).astype(mx.float32))
    ref = np.array(x.astype(mx.float32), dtype=np.float64) @ np.array(b.astype(mx.float32), dtype=np.float64)
    scale = np.abs(np.array(x.astype(mx.float32), dtype=np.float64)) @ np.abs(np.array(b.astype(mx.float32), dtype=np.float64))
    mxo = np.array(mx.matmul(x, b).astype(mx.float32))
    e = lambda o: float(np.linalg.norm(o - ref) / np.linalg.norm(scale))
    fns = {"before": lambda: before_fn(x, b), "matmul": lambda: ops.matmul(x, b), "mx.matmul": lambda: mx.matmul(x, b)}
    for f in fns.values():
        for _ in range(3): mx.eval(f())
    one = {k: [] for k in fns}; ind = {k: [] for k in fns}
    for r in range(7):
        for k, f in fns.items():
            one[k].append(one_at_a_time(f)); ind[k].append(independent(f))
    o = {k: statistics.median(v) for k, v in one.items()}; i = {k: statistics.median(v) for k, v in ind.items()}
    print(f"== {xs} @ {'W.T' if transposed else 'W'} {ws} {dt}: error now {e(now):.2e} before {e(before):.2e} mx.matmul {e(mxo):.2e}; "
          f"NaN {np.isnan(now).any()}", flush=True)
    for k in fns:
        print(f"  {k:10s} one at a time {o[k]*1e6:8.1f} us ({o['mx.matmul']/o[k]:.3f}x)  independent {i[k]*1e6:8.1f} us ({i['mx.matmul']/i[k]:.3f}x)", flush=True)
