"""256-row TF32 wgmma blocks: A by the TMA after a rounding pass (now) against
A by cp.async, rounded in shared memory by the producer (no pass), one at a
time and independent, beside cuBLAS TF32."""
import dataclasses, statistics, time
import numpy as np
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.build import launcher, specs, tensormap

captured = []
orig_prepared = launcher.prepared
def spy(spec, a_shape, b_shape, k_splits):
    captured.append((spec, a_shape, b_shape, k_splits))
    return orig_prepared(spec, a_shape, b_shape, k_splits)
launcher.prepared = spy

orig_args = launcher.launch_arguments
def no_a_map(spec, p, k_splits=1):
    params, shape_args = orig_args(spec, p, k_splits)
    params = list(params)
    params[16:16 + tensormap.WORDS] = [0] * tensormap.WORDS
    return params, shape_args

def variant(spec, a_shape, b_shape, k_splits, copy_a, lookahead=None):
    if lookahead is not None:
        t = tuple((k, lookahead if k == "LOOKAHEAD" else v) for k, v in spec.template)
        spec = dataclasses.replace(spec, template=t)
    if not copy_a:
        return orig_prepared.__wrapped__(spec, a_shape, b_shape, k_splits)
    saved = specs.KernelSpec.rounds_a_to_tf32
    specs.KernelSpec.rounds_a_to_tf32 = property(lambda self: False)
    launcher.launch_arguments = no_a_map
    try:
        return orig_prepared.__wrapped__(spec, a_shape, b_shape, k_splits)
    finally:
        specs.KernelSpec.rounds_a_to_tf32 = saved
        launcher.launch_arguments = orig_args

SHAPES = [(512, 4096, 4096, False), (512, 4096, 14336, False), (2048, 4096, 4096, False), (2048, 4096, 4096, True),
          (2048, 4096, 14336, False), (2048, 14336, 4096, False), (2048, 1024, 4096, False), (3072, 3072, 3072, False)]

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
    spec, a_shape, b_shape, k_splits = captured[-1]
    runs = {"pass+tma": variant(spec, a_shape, b_shape, k_splits, False),
            "copy_a": variant(spec, a_shape, b_shape, k_splits, True),
            "copy_a_la2": variant(spec, a_shape, b_shape, k_splits, True, 2)}
    outs = {}
    for name, run in runs.items():
        for x, y in ((a, b), (pos_a, pos_b)):
            outs.setdefault(name, []).append(np.array(run(x, y, None, {})))
    same = {n: all(np.array_equal(o, r) for o, r in zip(outs[n], outs["pass+tma"])) for n in outs}
    a64, b64 = np.array(pos_a, dtype=np.float64), np.array(pos_b, dtype=np.float64)
    ref64 = a64 @ b64
    def err(o): return float(np.linalg.norm(o - ref64) / np.linalg.norm(ref64))
    mx_pos = np.array(mx.matmul(pos_a, pos_b))
    print(f"== {M}x{N}x{K}{' x@W.T' if bt else ''} {dict(spec.template)} k_splits={k_splits}; same bits as pass+tma: {same}; "
          f"all-positive error ours {err(outs['copy_a'][1]):.3e} pass {err(outs['pass+tma'][1]):.3e} cuBLAS TF32 {err(mx_pos):.3e}", flush=True)
    fns = {name: (lambda run=run: run(a, b, None, {})) for name, run in runs.items()}
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
        print(f"  {k:12s} one at a time {o*1e6:8.1f} us ({statistics.median(one['cublas_tf32'])/o:.3f}x)  independent {i*1e6:8.1f} us ({statistics.median(ind['cublas_tf32'])/i:.3f}x)", flush=True)
