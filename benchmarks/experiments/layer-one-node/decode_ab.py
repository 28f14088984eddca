"""A decode step, MLX's model against ours with a layer's token as one node (x and W handed as they are)
and ours with the plain forward (W.T view, x reshaped, kernel), alternating rounds in one process."""
import statistics, sys, time
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import models

layers = int(sys.argv[1]) if len(sys.argv) > 1 else 4
rounds, steps = 7, 16
theirs = models.build("llama", mx.bfloat16, size="7b", layers=layers)
pair = {}
for name in ("one node", "three nodes"):
    m = models.build("llama", mx.bfloat16, size="7b", layers=layers)
    mlx_sgemm.nn.replace_linear(m)
    pair[name] = m
tokens = models.prompt(theirs, batch=1, length=512)
real = ops._layer_form
steps_of = {"MLX": models.decode_step(theirs, tokens)}
for name, m in pair.items():
    ops._compiled.cache_clear()
    if name == "three nodes":
        ops._layer_form = lambda *a, **k: None
    step = models.decode_step(m, tokens)
    for _ in range(3):
        mx.eval(step())
    ops._layer_form = real
    ops._compiled.cache_clear()
    steps_of[name] = step

def seconds(step):
    start = time.perf_counter()
    for _ in range(steps):
        mx.eval(step())
    return (time.perf_counter() - start) / steps

for s in steps_of.values():
    seconds(s)
times = {k: [] for k in steps_of}
for _ in range(rounds):
    for k, s in steps_of.items():
        times[k].append(seconds(s))
mlx_t = statistics.median(times["MLX"])
print(f"bfloat16 llama, {layers} layers of Llama 2 7B's shape, decode step after a 512-token prompt, "
      f"{rounds} alternating rounds of {steps} steps, median round:")
for k, v in times.items():
    t = statistics.median(v)
    print(f"  {k:12s} {t*1e3:7.3f} ms  ({mlx_t / t:.3f}x MLX)  rounds {[round(x*1e3, 3) for x in v]}")
