"""A bfloat16 decode step: MLX's model against ours with the layer's token
kernel at PARTS warps a column (4 as now, 2, 1 as MLX's GEMV), in alternating
rounds in one process; then each under PyTorch's profiler: GPU busy a step."""
import contextlib, os, statistics, sys, time
sys.path.insert(0, "benchmarks")  # decode_timeline, run from the repository root
import decode_timeline as dt
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import models, traces
from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import kernel_choice

L = int(os.environ.get("LAYERS", "32"))
PARTS = (4, 2, 1)
tokens = None
built = {"mlx": models.build("llama", mx.bfloat16, size="7b", layers=L)}
tokens = models.prompt(built["mlx"], batch=1, length=512)
steps = {"mlx": models.decode_step(built["mlx"], tokens)}
original = kernel_choice.half_gemv_one_row
for p in PARTS:
    model = models.build("llama", mx.bfloat16, size="7b", layers=L)
    mlx_sgemm.nn.replace_linear(model)
    kernel_choice.half_gemv_one_row = lambda e, o, p=p: specs.cuda_half_gemv_one_row(e, o, PARTS=p)
    ops._compiled.cache_clear(); ops._calls.clear()
    steps[f"parts{p}"] = models.decode_step(model, tokens)
    mx.eval(steps[f"parts{p}"]())  # the layers' token products recorded with this PARTS
    built[f"parts{p}"] = model
kernel_choice.half_gemv_one_row = original

def timed(step, n=16):
    start = time.perf_counter()
    for _ in range(n):
        mx.eval(step())
    return (time.perf_counter() - start) / n

for s in steps.values():
    timed(s, 4)
times = {k: [] for k in steps}
for _ in range(int(os.environ.get("ROUNDS", "7"))):
    for k, s in steps.items():
        times[k].append(statistics.median(timed(s) for _ in range(3)))
med = {k: statistics.median(v) for k, v in times.items()}
print(f"bf16 decode step, {L} layers, ms: " + ", ".join(f"{k} {v*1e3:.3f}" for k, v in med.items())
      + "; MLX / " + ", ".join(f"{k} {med['mlx']/v:.3f}" for k, v in med.items() if k != "mlx"))
print("   rounds:", {k: [round(x * 1e3, 3) for x in v] for k, v in times.items()}, flush=True)
from torch.profiler import ProfilerActivity, profile
for k, s in steps.items():
    prof = profile(activities=[ProfilerActivity.CUDA])
    with prof:
        for _ in range(dt.STEPS):
            mx.eval(s())
    ev = [e for e in traces.profiler_events(prof) if e.get("cat") == "kernel"]
    iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev)
    busy, end = 0.0, -1e30
    for a, b in iv:
        if b > end:
            busy += b - max(a, end); end = b
    prods = [e["dur"] for e in ev if "gemv" in e["name"] or "one_row" in e["name"]]
    print(f"   {k}: kernel sum {sum(e['dur'] for e in ev)/dt.STEPS/1e3:.3f} ms, GPU busy {busy/dt.STEPS/1e3:.3f} ms, "
          f"products {len(prods)/dt.STEPS:.0f} a step summing {sum(prods)/dt.STEPS/1e3:.3f} ms", flush=True)
