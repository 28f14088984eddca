"""A bfloat16 decode step: layers with half_gemv_one_row for the token (new)
against the same layers routing the token to half_gemv (before), and MLX's
model, alternating rounds in one process."""
import dataclasses, statistics, time, sys
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import models
from mlx_sgemm.dispatch import kernel_choice

STEPS, ROUNDS, REPEATS = 32, 7, 3
orig = kernel_choice.for_operands

def before(launch, backend, p, types, float32_out=False, deterministic=False, matmul=False, wgmma=None, layer=False):
    if layer and p.M == 1:  # the layer's choice before: half_gemv in a layer's blocks (the same for 2 rows)
        p = dataclasses.replace(p, M=2)
    return orig(launch, backend, p, types, float32_out, deterministic, matmul, wgmma, layer)

LAYERS = int(sys.argv[1])

def build(swap):
    m = models.build("llama", mx.bfloat16, size="7b", layers=LAYERS)
    if swap:
        mlx_sgemm.nn.replace_linear(m)
    return m

tokens = None
steps = {}
theirs = build(False)
tokens = models.prompt(theirs, batch=1, length=512)
steps["mlx"] = models.decode_step(theirs, tokens)
kernel_choice.for_operands = before
old = build(True)
steps["before"] = models.decode_step(old, tokens)
for _ in range(3): mx.eval(steps["before"]())
kernel_choice.for_operands = orig
ops._compiled.cache_clear()
new = build(True)
steps["one_row"] = models.decode_step(new, tokens)
for _ in range(3): mx.eval(steps["one_row"]())
for _ in range(3): mx.eval(steps["mlx"]())

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
print(LAYERS, "layers, median ms a step:", {k: round(v * 1e3, 3) for k, v in med.items()})
print("x MLX: before %.3f, one_row %.3f" % (med["mlx"] / med["before"], med["mlx"] / med["one_row"]))
