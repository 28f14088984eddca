"""256-row TF32 wgmma blocks: A rounded by a pass then copied by the TMA (now)
against A through the producer's registers, rounded on the way (no pass),
with and without L2 prefetches; bits compared, one at a time and independent,
beside cuBLAS TF32 (compiled calls)."""
import dataclasses, statistics, time
import numpy as np
import mlx.core as mx
from mlx_sgemm import ops
from mlx_sgemm.build import launcher

captured = []
orig_prepared = launcher.prepared
def spy(spec, a_shape, b_shape, k_splits):
    captured.append((spec, a_shape, b_shape, k_splits))
    return orig_prepared(spec, a_shape, b_shape, k_splits)
launcher.prepared = spy

def variant(spec, a_shape, b_shape, k_splits, **changes):
    t = tuple((k, changes.get(k, v)) for k, v in spec.template)
    run = orig_prepared.__wrapped__(dataclasses.replace(spec, template=t), a_shape, b_shape, k_splits)
    return run

SHAPES = [(512, 4096, 4096, False), (512, 4096, 14336, False), (2048, 4096, 4096, False), (2048, 4096, 4096, True),
          (2048, 14336, 4096, False), (2048, 1024, 4096, False), (3072, 3072, 3072, False), (4096, 4096, 4096, False)]
VARIANTS = {"pass+tma": {}, "regs": dict(A_REGISTERS=True), "regs_pf1": dict(A_REGISTERS=True, A_PREFETCH=1),
            "regs_pf2": dict(A_REGISTERS=True, A_PREFETCH=2)}

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

for M, N, K, bt in SHAPES:
    a = mx.random.normal((M, K)); w = mx.random.normal((N, K)) if bt else mx.random.normal((K, N))
    b = w.T if bt else w
    pos_a, pos_b = mx.abs(a), mx.abs(b)
    mx.eval(a, w, pos_a, pos_b)
    captured.clear(); ops._compiled.cache_clear(); ops._calls.clear()
    ref = ops.matmul(a, b, precision="tf32"); mx.eval(ref)
    if not captured:
        print(f"== {M}x{N}x{K}{' x@W.T' if bt else ''}: no launch captured, skipped", flush=True); continue
    spec, a_shape, b_shape, k_splits = captured[-1]
    if dict(spec.template).get("BM") != 256:
        print(f"== {M}x{N}x{K}: not a 256-row block ({spec.name}), skipped"); continue
    runs = {name: variant(spec, a_shape, b_shape, k_splits, **ch) for name, ch in VARIANTS.items()}
    outs = {name: [np.array(run(x, y, None, {})) for x, y in ((a, b), (pos_a, pos_b))] for name, run in runs.items()}
    same = {n: all(np.array_equal(o, r) for o, r in zip(outs[n], outs["pass+tma"])) for n in outs}
    a64, b64 = np.array(pos_a, dtype=np.float64), np.array(pos_b, dtype=np.float64)
    ref64 = a64 @ b64
    def err(o): return float(np.linalg.norm(o - ref64) / np.linalg.norm(ref64))
    mx_pos = np.array(mx.matmul(pos_a, pos_b))
    print(f"== {M}x{N}x{K}{' x@W.T' if bt else ''} k_splits={k_splits}; same bits as pass+tma: {same}; "
          f"all-positive error regs {err(outs['regs'][1]):.3e} pass {err(outs['pass+tma'][1]):.3e} cuBLAS TF32 {err(mx_pos):.3e}",
          flush=True)
    fns = {name: (lambda c=mx.compile(lambda x, y, run=run: run(x, y, None, {})): c(a, b)) for name, run in runs.items()}
    fns["cublas_tf32"] = lambda: mx.matmul(a, b)
    fns["matmul"] = lambda: ops.matmul(a, b, precision="tf32")
    for f in fns.values():
        for _ in range(3): mx.eval(f())
    one = {k: [] for k in fns}; ind = {k: [] for k in fns}
    for r in range(7):
        for k, f in fns.items():
            one[k].append(one_at_a_time(f)); ind[k].append(independent(f))
    for k in fns:
        o, i = statistics.median(one[k]), statistics.median(ind[k])
        print(f"  {k:12s} one at a time {o*1e6:8.1f} us ({statistics.median(one['cublas_tf32'])/o:.3f}x)  "
              f"independent {i*1e6:8.1f} us ({statistics.median(ind['cublas_tf32'])/i:.3f}x)", flush=True)
