"""Probe: half_gemv_one_row checked and timed.
  python benchmarks/experiments/half-gemv-one-row/one_row.py check
  python benchmarks/experiments/half-gemv-one-row/one_row.py ncu M N K T|R dtype UNROLL,MIN_BLOCKS ...   (under ncu)"""
import sys, os
sys.path.insert(0, "benchmarks")
import numpy as np
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher, specs

def spec_of(dtype, v, out=None):
    u, mb, parts = (int(x) for x in v.split(","))
    return specs.cuda_half_gemv_one_row(dtype, out, UNROLL=u, MIN_BLOCKS=mb, PARTS=parts)

def err(c, a, b):
    a64, b64 = np.array(a.astype(mx.float32), dtype=np.float64), np.array(b.astype(mx.float32), dtype=np.float64)
    ref = a64 @ b64
    c = np.array(c.astype(mx.float32), dtype=np.float64)
    if not np.isfinite(c).all():
        return float("nan")
    return float(np.linalg.norm(c - ref) / np.linalg.norm(np.abs(a64) @ np.abs(b64)))

if sys.argv[1] == "check":
    rng = np.random.default_rng(1)
    bad = 0
    for dtype in ("bfloat16", "float16"):
        dt = getattr(mx, dtype)
        for v in ("2,8,1", "2,8,2", "2,8,4", "4,4,2"):
            for out in (None, "float32"):
                sp = spec_of(dtype, v, out)
                cases = []
                for (m, k, n) in ((1, 4096, 4096), (1, 4093, 1030), (1, 14336, 1000), (3, 272, 40), (1, 8, 5), (2, 4104, 4097)):
                    a = mx.array(rng.standard_normal((m, k)).astype(np.float32)).astype(dt)
                    w = mx.array(rng.standard_normal((n, k)).astype(np.float32)).astype(dt)
                    cases.append((f"{m}x{n}x{k} W.T", a, w.T))
                    cases.append((f"{m}x{n}x{k} W", a, mx.array(np.ascontiguousarray(np.array(w.astype(mx.float32)).T)).astype(dt)))
                wide = mx.array(rng.standard_normal((1030, 4104)).astype(np.float32)).astype(dt)
                a = mx.array(rng.standard_normal((1, 4093)).astype(np.float32)).astype(dt)
                cases.append(("slice W.T", a, wide[:, :4093].T))
                bw = mx.array(rng.standard_normal((600, 4101)).astype(np.float32)).astype(dt)
                cases.append(("row-major slice", a[:, :600], bw[:, 3:4096]))
                cases.append(("strided B", a[:, :300], bw[:300:, ::7][:, :500]))
                xb = mx.array(rng.standard_normal((3, 1, 4096)).astype(np.float32)).astype(dt)
                wb = mx.array(rng.standard_normal((3, 520, 4096)).astype(np.float32)).astype(dt)
                cases.append(("batch W.T", xb, mx.swapaxes(wb, -1, -2)))
                cases.append(("x col-major", mx.array(rng.standard_normal((4096, 1)).astype(np.float32)).astype(dt).T, wb[0].T))
                for name, a, b in cases:
                    with mlx_sgemm.poisoned_outputs():
                        c = launcher.launch(sp, a, b)
                    e = err(c, a, b)
                    e_mx = err(mx.matmul(a, b), a, b)
                    ok = np.isfinite(e) and e <= e_mx * 1.5 + 1e-6 and tuple(c.shape) == tuple(mx.matmul(a, b).shape)
                    if not ok:
                        bad += 1
                    if not ok or name.startswith("1x4096"):
                        print(dtype, v, out, name, "err", e, "mx", e_mx, "OK" if ok else "BAD", flush=True)
                # repeat bitwise same
                a = mx.array(rng.standard_normal((1, 4096)).astype(np.float32)).astype(dt)
                w = mx.array(rng.standard_normal((1000, 4096)).astype(np.float32)).astype(dt)
                c1, c2 = launcher.launch(sp, a, w.T), launcher.launch(sp, a, w.T)
                assert mx.array_equal(c1, c2).item()
    print("check done, bad =", bad)
else:
    _, _, m, n, k, lay, dtype, *variants = sys.argv
    m, n, k = int(m), int(n), int(k)
    dt = getattr(mx, dtype)
    a, w = (x.astype(dt) for x in accuracy.random_operands((m, k), (n, k) if lay == "T" else (k, n)))
    mx.eval(a, w)
    b = mx.swapaxes(w, -1, -2) if lay == "T" else w
    for _ in range(5): mx.eval(mx.matmul(a, b))
    for _ in range(5): mx.eval(ops.matmul(a, b))
    for v in variants:
        sp = spec_of(dtype, v)
        for _ in range(5): mx.eval(launcher.launch(sp, a, b))
