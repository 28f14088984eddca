"""A batch of B tokens' decode step: layers folding the batch into rows (now)
against layers multiplying it as B products (before), and MLX's model."""
import statistics, time, sys
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import models

STEPS, ROUNDS, REPEATS = 16, 5, 3
LAYERS, BATCH = int(sys.argv[1]), int(sys.argv[2])
fold = ops.layer_rows

def build(swap):
    m = models.build("llama", mx.bfloat16, size="7b", layers=LAYERS)
    if swap:
        mlx_sgemm.nn.replace_linear(m)
    return m

steps = {}
theirs = build(False)
tokens = models.prompt(theirs, batch=BATCH, length=512)
steps["mlx"] = models.decode_step(theirs, tokens)
ops.layer_rows = lambda s, n: tuple(s)
steps["batch_of_products"] = models.decode_step(build(True), tokens)
for _ in range(3): mx.eval(steps["batch_of_products"]())
ops.layer_rows = fold
steps["folded"] = models.decode_step(build(True), tokens)
for k in steps:
    for _ in range(3): mx.eval(steps[k]())

def seconds(step):
    start = time.perf_counter()
    for _ in range(STEPS):
        mx.eval(step())
    return (time.perf_counter() - start) / STEPS

times = {k: [] for k in steps}
for r in range(ROUNDS):
    for k, step in steps.items():
        times[k].append(statistics.median(seconds(step) for _ in range(REPEATS)))
    print("round", r, {k: round(v[-1] * 1e3, 3) for k, v in times.items()}, flush=True)
med = {k: statistics.median(v) for k, v in times.items()}
print(LAYERS, "layers, batch", BATCH, "median ms a step:", {k: round(v * 1e3, 3) for k, v in med.items()})
print("x MLX: batch of products %.3f, folded %.3f" % (med["mlx"] / med["batch_of_products"], med["mlx"] / med["folded"]))
