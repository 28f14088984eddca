"""tile_threads variants (loop order, block shape) against mx.matmul (TF32 off), 4096^3 and 8192^3."""
import os, sys, dataclasses, statistics, time
os.environ["MLX_ENABLE_TF32"] = "0"
import mlx.core as mx
import numpy as np
from mlx_sgemm.build import specs, launcher
from mlx_sgemm.bench import timing

base = next(s for s in specs._SPECS["cuda"] if s.stage == "tile_threads")
def variant(order, bm=128, bn=256, tm=8, tn=16):
    t = tuple((k, {"BM": bm, "BN": bn, "TM": tm, "TN": tn}.get(k, v)) for k, v in base.template)
    return dataclasses.replace(base, source_file="tile_threads_probe.cu", template=t, block_m=bm, block_n=bn,
                               defines=(("PROBE_ORDER", order),))
V = {"base": base, "probe0": variant(0), "ij->ji": variant(1), "serpentine": variant(2),
     "256x128 16x8": variant(0, 256, 128, 16, 8), "256x128 16x8 ji": variant(1, 256, 128, 16, 8)}
for n in (4096, 8192):
    a = mx.random.normal((n, n)); b = mx.random.normal((n, n)); mx.eval(a, b)
    ref = np.array(mx.matmul(a[:64], b), dtype=np.float64)
    fns = {"mx.matmul": lambda: mx.matmul(a, b)}
    for name, spec in V.items():
        c = launcher.launch(spec, a, b)
        err = float(np.abs(np.array(c[:64]) - ref).max())
        print(name, "max |diff| to mx.matmul rows", err, flush=True)
        fns[name] = (lambda spec=spec: launcher.launch(spec, a, b))
    med = timing.alternating_medians(fns, rounds=5, repeats=5, per_evaluation=2 if n == 4096 else 1)
    flops = 2 * n ** 3
    for name, s in med.items():
        print(f"{n}^3 {name:18s} {s*1e6:9.1f} us {flops/s/1e12:6.2f} TFLOP/s  {med['mx.matmul']/s:.3f}x", flush=True)
