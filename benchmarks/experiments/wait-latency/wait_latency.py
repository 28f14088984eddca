"""How long a host thread takes to return from waiting on a CUDA event after the
GPU's work ends, by the event's flags: blocking sync (as mx.eval waits:
cudaEventBlockingSync) against spinning (the default), for GPU work of
0.05-20 ms (memsets), through the driver API by ctypes."""
import ctypes, statistics, time

cu = ctypes.CDLL("libcuda.so.1")
def check(r, what):
    if r != 0: raise RuntimeError(f"{what}: CUDA error {r}")
check(cu.cuInit(0), "cuInit")
dev = ctypes.c_int(); check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p(); check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
check(cu.cuCtxSetCurrent(ctx), "set current")
SIZE = 1 << 28  # bytes a memset
buf = ctypes.c_uint64(); check(cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(SIZE)), "alloc")

def event(flags):
    e = ctypes.c_void_p(); check(cu.cuEventCreate(ctypes.byref(e), flags), "event"); return e

def sample(memsets, blocking):
    e0, e1 = event(0), event(1 if blocking else 0)
    t0 = time.perf_counter()
    check(cu.cuEventRecord(e0, None), "record")
    for _ in range(memsets):
        check(cu.cuMemsetD32Async(buf, ctypes.c_uint(0), ctypes.c_size_t(SIZE // 4), None), "memset")
    check(cu.cuEventRecord(e1, None), "record")
    check(cu.cuEventSynchronize(e1), "sync")
    t1 = time.perf_counter()
    ms = ctypes.c_float()
    # elapsed time needs both events timed: e1 with blocking sync is still timed (no DISABLE_TIMING)
    check(cu.cuEventElapsedTime(ctypes.byref(ms), e0, e1), "elapsed")
    cu.cuEventDestroy_v2(e0); cu.cuEventDestroy_v2(e1)
    return (t1 - t0) - ms.value / 1e3, ms.value

sample(4, True); sample(4, False)
_, one = sample(1, False)
print(f"one memset of {SIZE >> 20} MB: {one:.3f} ms", flush=True)
for memsets in (1, 4, 16, 64, 160):
    rounds = {True: [], False: []}
    for _ in range(15):
        for blocking in (True, False):
            rounds[blocking].append(sample(memsets, blocking)[0])
    b, sp = rounds[True], rounds[False]
    print(f"work ~{memsets * one:6.2f} ms: host time beyond the GPU's, blocking sync median {statistics.median(b)*1e6:7.1f} us "
          f"[{min(b)*1e6:.0f}-{max(b)*1e6:.0f}], spin {statistics.median(sp)*1e6:7.1f} us [{min(sp)*1e6:.0f}-{max(sp)*1e6:.0f}]", flush=True)
