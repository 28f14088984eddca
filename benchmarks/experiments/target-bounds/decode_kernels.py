"""A bf16 decode step's products by grid (shape), ours against MLX's, and the
GPU's busy time (union of kernel intervals) a step. LAYERS (8)."""
import collections, os, statistics, sys, time
sys.path.insert(0, "benchmarks")  # decode_timeline, run from the repository root
import decode_timeline as dt
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm.bench import models, traces
from torch.profiler import ProfilerActivity, profile

L = int(os.environ.get("LAYERS", "8"))
theirs, ours = (models.build("llama", mx.bfloat16, size="7b", layers=L) for _ in range(2))
mlx_sgemm.nn.replace_linear(ours)
tokens = models.prompt(theirs, batch=1, length=512)
for name, model in (("mlx", theirs), ("ours", ours), ("mlx", theirs), ("ours", ours)):
    dt.decoded_steps(model, tokens, __import__("contextlib").nullcontext())
    prof = profile(activities=[ProfilerActivity.CUDA])
    wall, host = dt.decoded_steps(model, tokens, prof)
    ev = [e for e in traces.profiler_events(prof) if e.get("cat") == "kernel"]
    iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev)
    busy, end = 0.0, -1e30
    for s, e in iv:
        if e > end:
            busy += e - max(s, end); end = e
    by = collections.defaultdict(list)
    for e in ev:
        n = e["name"].split("(")[0]
        if "gemv" in n or "one_row" in n:
            by[(n[-40:], tuple(e["args"].get("grid", ())))].append(e["dur"])
    print(f"== {name}: wall {wall*1e3:.3f} ms (profiled), build {host['build']*1e3:.3f}, kernel sum "
          f"{sum(e['dur'] for e in ev)/dt.STEPS/1e3:.3f} ms, GPU busy {busy/dt.STEPS/1e3:.3f} ms a step")
    for (n, g), d in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        print(f"   {len(d)/dt.STEPS:5.1f}/step median {statistics.median(d):6.1f} us grid {g} {n}")
