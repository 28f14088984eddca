"""A bfloat16 decode step: MLX's model, ours with each layer's own launch
(before), ours with sibling layers in one launch; alternating rounds."""
import statistics, time, sys
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm.bench import models

STEPS, ROUNDS, REPEATS = 32, 9, 3
LAYERS = int(sys.argv[1])

def build(kind):
    m = models.build("llama", mx.bfloat16, size="7b", layers=LAYERS)
    if kind != "mlx":
        mlx_sgemm.nn.replace_linear(m)
    if kind == "before":
        for _, layer in m.named_modules():
            if isinstance(layer, mlx_sgemm.nn.Linear):
                layer._siblings = None
    return m

steps, tokens = {}, None
for kind in ("mlx", "before", "siblings"):
    m = build(kind)
    if tokens is None:
        tokens = models.prompt(m, batch=1, length=512)
    steps[kind] = models.decode_step(m, tokens)
    for _ in range(3): mx.eval(steps[kind]())

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
print("x MLX: before %.3f, siblings %.3f" % (med["mlx"] / med["before"], med["mlx"] / med["siblings"]), flush=True)
