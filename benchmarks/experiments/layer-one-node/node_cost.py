"""What an extra view node (reshape, transpose) costs a chained product, built and evaluated one chain at a time."""
import statistics, time
import mlx.core as mx
K = 64
W = mx.random.normal((K, K)).astype(mx.bfloat16)
x = mx.random.normal((1, K)).astype(mx.bfloat16)
WT = W.T
mx.eval(W, x, WT)
N = 29

def chain(kind):
    y = x
    for _ in range(N):
        if kind == "reshape2":
            y = y.reshape(1, 1, K).reshape(1, K)
        y = mx.matmul(y, WT if kind == "plain" else W.T)
    return y

def seconds(kind):
    samples = []
    for _ in range(300):
        t = time.perf_counter()
        mx.eval(chain(kind))
        mx.synchronize()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)

for kind in ("plain", "transpose", "reshape2"):
    seconds(kind)
res = {k: [] for k in ("plain", "transpose", "reshape2")}
for _ in range(5):
    for k in res:
        res[k].append(seconds(k))
for k, v in res.items():
    print(f"{k:10s} chain of {N}: {statistics.median(v)*1e6:8.1f} us  ({statistics.median(v)*1e6/N:6.2f} us a product)  rounds {[round(s*1e6) for s in v]}")
p, t, r = (statistics.median(res[k]) for k in ("plain", "transpose", "reshape2"))
print(f"transpose node: {(t-p)/N*1e6:.2f} us each; two reshape nodes: {(r-t)/N*1e6:.2f} us a pair")
