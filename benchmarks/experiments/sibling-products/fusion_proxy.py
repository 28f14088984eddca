"""Proxy for sibling fusion: a token's q/k/v (and gate/up) products as one
layer over the concatenated weights, the siblings' outputs sliced from it.
Decode step, bf16, MLX's model / ours / ours-fused, alternating rounds."""
import statistics, time, sys
import mlx.core as mx
import mlx_sgemm
from mlx_sgemm.bench import models

STEPS, ROUNDS, REPEATS = 32, 7, 3
LAYERS = int(sys.argv[1])

class Shared:
    def __init__(self, layer, sizes):
        self.layer, self.x, self.y = layer, None, None
        self.bounds = []
        o = 0
        for s in sizes:
            self.bounds.append((o, o + s)); o += s
    def part(self, i):
        def call(x):
            if self.x is not x:
                self.x, self.y = x, self.layer(x)
            a, b = self.bounds[i]
            return self.y[..., a:b]
        return call

def fuse(model, names_by_parent):
    for layer in model.model.layers:
        for parent_name, names in names_by_parent.items():
            parent = getattr(layer, parent_name)
            subs = [getattr(parent, n) for n in names]
            w = mx.concatenate([s.weight for s in subs], axis=0)
            big = mlx_sgemm.nn.Linear(w.shape[1], w.shape[0], bias=False)
            big.weight = w
            shared = Shared(big, [s.weight.shape[0] for s in subs])
            for i, n in enumerate(names):
                object.__setattr__(parent, n, shared.part(i)) if False else setattr(parent, n, shared.part(i))
    mx.eval(model.parameters())

def build(kind):
    m = models.build("llama", mx.bfloat16, size="7b", layers=LAYERS)
    if kind != "mlx":
        mlx_sgemm.nn.replace_linear(m)
    if kind == "fused":
        fuse(m, {"self_attn": ["q_proj", "k_proj", "v_proj"], "mlp": ["gate_proj", "up_proj"]})
    return m

steps = {}
tokens = None
for kind in ("mlx", "ours", "fused"):
    m = build(kind)
    if tokens is None:
        tokens = models.prompt(m, batch=1, length=512)
    steps[kind] = models.decode_step(m, tokens)
    for _ in range(3): mx.eval(steps[kind]())
# same tokens? check the three models agree on the next token a few steps
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
print("x MLX: ours %.3f, fused %.3f" % (med["mlx"] / med["ours"], med["mlx"] / med["fused"]))
