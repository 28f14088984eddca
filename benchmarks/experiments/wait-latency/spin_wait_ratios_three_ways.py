"""matmul against mx.matmul one product at a time, waited for three ways in one
process, the CUDA context's flags left as MLX makes them: as the benchmark waits
(mx.eval, a CUDA event with blocking sync, then mx.synchronize), mx.eval alone,
and mx.async_eval then cuCtxSynchronize (the driver's default: it spins where the
host has more cores than contexts), then mx.eval, which finds its event done.
    python benchmarks/experiments/wait-latency/spin_wait_ratios_three_ways.py float32|tf32"""
import ctypes, os, statistics, sys, time
precision = sys.argv[1]
os.environ["MLX_ENABLE_TF32"] = "1" if precision == "tf32" else "0"
cu = ctypes.CDLL("libcuda.so.1")
assert cu.cuInit(0) == 0
dev = ctypes.c_int(); assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
import mlx.core as mx
import mlx_sgemm
ctx = ctypes.c_void_p(); assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
flags, active = ctypes.c_uint(), ctypes.c_int()
cu.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))
print("primary context flags", flags.value, "active", active.value, flush=True)

def blocking(fn):
    c = fn(); mx.eval(c); mx.synchronize()

def eval_only(fn):
    c = fn(); mx.eval(c)

def spinning(fn):
    c = fn(); mx.async_eval(c)
    assert cu.cuCtxSetCurrent(ctx) == 0 and cu.cuCtxSynchronize() == 0
    mx.eval(c)

for n in (2048, 4096, 8192):
    a = mx.random.normal((n, n)); b = mx.random.normal((n, n)); mx.eval(a, b)
    fns = {"ours": lambda: mlx_sgemm.matmul(a, b, precision=precision), "mx.matmul": lambda: mx.matmul(a, b)}
    waits = {"eval+sync": blocking, "eval only": eval_only, "ctx sync": spinning}
    for fn in fns.values():
        for w in waits.values():
            for _ in range(3): w(fn)
    times = {(f, w): [] for f in fns for w in waits}
    for _ in range(7):
        for f, fn in fns.items():
            for w, wait in waits.items():
                samples = []
                for _ in range(8):
                    t0 = time.perf_counter(); wait(fn); samples.append(time.perf_counter() - t0)
                times[(f, w)].append(statistics.median(samples))
    med = {k: statistics.median(v) for k, v in times.items()}
    for w in waits:
        print(f"{precision} {n}^3 {w:10s}: ours {med[('ours', w)]*1e6:9.1f} us, mx.matmul {med[('mx.matmul', w)]*1e6:9.1f} us, "
              f"ratio {med[('mx.matmul', w)] / med[('ours', w)]:.2f}x", flush=True)
