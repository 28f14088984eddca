"""Where a token's q, k, v cost goes: each layer's own launch against one
launch of the three, host time one at a time and GPU time of many."""
import statistics, time
import mlx.core as mx
import mlx.nn
import mlx_sgemm
from mlx_sgemm import ops

class Att(mlx.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (mlx.nn.Linear(4096, 4096, bias=False) for _ in range(3))
        self.set_dtype(mx.bfloat16)

theirs = Att(); mx.eval(theirs.parameters())
before = mlx_sgemm.nn.replace_linear(Att()); before.update(theirs.parameters())
for _, l in before.named_modules():
    if isinstance(l, mlx_sgemm.nn.Linear): l._siblings = None
sib = mlx_sgemm.nn.replace_linear(Att()); sib.update(theirs.parameters())
def calls(m, x): return [m.q(x), m.k(x), m.v(x)]
xs = [mx.random.normal((1, 1, 4096)).astype(mx.bfloat16) for _ in range(64)]
mx.eval(xs)
for m in (theirs, before, sib):
    for x in xs[:4]: mx.eval(calls(m, x))
print("fused:", sib.q._siblings.partners, sib.q._siblings.ready is not None)
prod = ops.sibling_product()
ws = [sib.q.weight, sib.k.weight, sib.v.weight]
def one_at_a_time(m):
    build, total = [], []
    for x in xs:
        t0 = time.perf_counter(); ys = calls(m, x); t1 = time.perf_counter(); mx.eval(ys); t2 = time.perf_counter()
        build.append(t1 - t0); total.append(t2 - t0)
    return statistics.median(build) * 1e6, statistics.median(total) * 1e6
def many(fn, n=50):
    mx.eval(fn(xs[0])); mx.synchronize()
    t0 = time.perf_counter(); mx.eval([fn(x) for x in xs[:n]]); mx.synchronize()
    return (time.perf_counter() - t0) / n * 1e6
for r in range(5):
    row = {name: one_at_a_time(m) for name, m in (("mlx", theirs), ("before", before), ("siblings", sib))}
    print("round", r, "build / built+evaluated us:", {k: (round(a, 1), round(b, 1)) for k, (a, b) in row.items()}, flush=True)
for r in range(3):
    print("many: mlx %.1f before %.1f siblings-kernel %.1f us" % (many(lambda x: calls(theirs, x)), many(lambda x: calls(before, x)),
          many(lambda x: prod(x, ws))), flush=True)
