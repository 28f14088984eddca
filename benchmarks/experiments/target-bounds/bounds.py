"""What the one-at-a-time targets can reach on this host: each side's time
against the cheapest product the package could make (an empty custom-kernel
node; a node that holds the GPU as long as a product at full bandwidth; the
split's products kernel alone, its inputs made beforehand).

    MODE=float32|tf32 python bounds.py     (square products, cuBLAS SGEMM or TF32)
    MODE=tf32split python bounds.py        (TF32: the split against matmul's choice, with errors)
    MODE=rows python bounds.py             (a few rows of bfloat16 x @ W)
    MODE=spin python bounds.py             (bfloat16 x @ W.T against nodes of a product's length)
    MODE=decode LAYERS=4 python bounds.py  (a bfloat16 decode step, products as empty nodes)
"""
import os, statistics, sys, time
MODE = os.environ.get("MODE", "float32")
if MODE not in ("tf32", "tf32split"):
    os.environ["MLX_ENABLE_TF32"] = "0"
import mlx.core as mx
from mlx_sgemm.bench import timing

ROUNDS = int(os.environ.get("ROUNDS", "7"))


def empty_node(shape, dtype):
    """A compiled function whose graph is one custom-kernel node that writes nothing."""
    k = mx.fast.cuda_kernel(name="nothing", input_names=["a", "b"], output_names=["c"], source="(void)a; (void)b;")
    return mx.compile(lambda a, b: k(inputs=[a, b], output_shapes=[shape], output_dtypes=[dtype],
                                     grid=(32, 1, 1), threadgroup=(32, 1, 1))[0])


def rounds(fns, calls=timing.ONE_AT_A_TIME, repeats=9):
    r = timing.alternating_rounds(fns, rounds=ROUNDS, repeats=repeats, calls=calls)
    return {k: statistics.median(v) for k, v in r.items()}, r


def squares(precision):
    from mlx_sgemm import matmul
    from mlx_sgemm.emulation import gpu, half_split
    for n in (2048, 4096, 8192):
        a = mx.random.normal((n, n)); b = mx.random.normal((n, n)); mx.eval(a, b)
        spec, ah, bh, ast, bst = half_split._split(a, b, precision)
        direct = gpu.fallback_product(a, b, half_split._choice(), ast, bst)
        mx.eval(ah, bh, ast, bst, direct)
        prod = mx.compile(lambda ah, bh, ast, bst, d: half_split._products(ah, bh, ast, bst, d, n, n, n, spec))
        nothing = empty_node((n, n), mx.float32)
        a16, b16 = a.astype(mx.float16), b.astype(mx.float16); mx.eval(a16, b16)
        fns = {"cublas": lambda: mx.matmul(a, b), "matmul": lambda: matmul(a, b, precision=precision),
               "products_alone": lambda: prod(ah, bh, ast, bst, direct), "empty_node": lambda: nothing(a, b),
               "cublas_fp16": lambda: mx.matmul(a16, b16)}
        med, _ = rounds(fns, repeats=9 if n < 8192 else 5)
        c = med["cublas"]
        print(f"{precision} {n}^3 one at a time, us: " + ", ".join(f"{k} {v*1e6:.0f}" for k, v in med.items()))
        print(f"   cuBLAS / x: matmul {c/med['matmul']:.2f}x, products alone {c/med['products_alone']:.2f}x,"
              f" empty node {c/med['empty_node']:.2f}x, cuBLAS fp16 x{(2 if precision=='tf32' else 1)}: "
              f"{c/med['cublas_fp16']:.2f}x", flush=True)
        del a, b, ah, bh, direct


def rows():
    from mlx_sgemm import matmul
    for m, n, k, t in ((1, 4096, 4096, False), (4, 4096, 14336, False), (8, 4096, 4096, False),
                       (8, 4096, 14336, False), (1, 14336, 4096, True), (1, 4096, 4096, True)):
        a = mx.random.normal((m, k)).astype(mx.bfloat16)
        w = mx.random.normal((n, k) if t else (k, n)).astype(mx.bfloat16); mx.eval(a, w)
        b = w.T if t else w
        nothing = empty_node((m, n), mx.bfloat16)
        fns = {"mx_matmul": lambda: mx.matmul(a, b), "matmul": lambda: matmul(a, b), "empty_node": lambda: nothing(a, b)}
        med, r = rounds(fns, repeats=15)
        print(f"bf16 {m}x{n}x{k}{' W.T' if t else ''}, us: " + ", ".join(f"{k_} {v*1e6:.1f}" for k_, v in med.items())
              + f"; mx.matmul / matmul {med['mx_matmul']/med['matmul']:.3f}, / empty node {med['mx_matmul']/med['empty_node']:.3f}",
              flush=True)


def decode():
    import mlx_sgemm
    from mlx_sgemm.bench import models
    layers = int(os.environ.get("LAYERS", "4"))
    theirs, ours, floor_ = (models.build("llama", mx.bfloat16, size="7b", layers=layers) for _ in range(3))
    mlx_sgemm.nn.replace_linear(ours)
    mlx_sgemm.nn.replace_linear(floor_)
    cache = {}

    class Floor(mlx_sgemm.nn.Linear):
        def __call__(self, x):
            w = self["weight"]
            key = (x.shape, w.shape)
            f = cache.get(key)
            if f is None:
                f = cache[key] = empty_node((*x.shape[:-1], w.shape[0]), x.dtype)
            return f(x, w)

    import mlx.nn as nn
    for _, m in floor_.named_modules():
        if isinstance(m, mlx_sgemm.nn.Linear):
            m.__class__ = Floor
    tokens = models.prompt(theirs, batch=1, length=512)
    steps = 16
    def decode_of(model):
        step = models.decode_step(model, tokens)
        def seconds():
            start = time.perf_counter()
            for _ in range(steps):
                mx.eval(step())
            return (time.perf_counter() - start) / steps
        return seconds
    fns = {"mlx": decode_of(theirs), "ours": decode_of(ours), "empty_nodes": decode_of(floor_)}
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for k, f in fns.items():
            times[k].append(statistics.median(f() for _ in range(3)))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"bf16 decode step, {layers} layers, ms: " + ", ".join(f"{k} {v*1e3:.3f}" for k, v in med.items())
          + f"; MLX / ours {med['mlx']/med['ours']:.3f}, MLX / empty nodes {med['mlx']/med['empty_nodes']:.3f}")
    print("   rounds:", {k: [round(x * 1e3, 3) for x in v] for k, v in times.items()}, flush=True)




def tf32_split():
    """TF32: the split (one float16 part) against the pipeline matmul runs, and cuBLAS TF32."""
    import numpy as np
    from mlx_sgemm import matmul
    from mlx_sgemm.emulation.half_split import fp16_emulated
    from mlx_sgemm.bench import measure
    for m, n, k in ((2048, 2048, 2048), (4096, 4096, 4096), (2048, 4096, 4096), (4096, 4096, 14336),
                    (2048, 14336, 4096), (8192, 8192, 8192)):
        for kind in ("normal", "positive"):
            rng = np.random.default_rng()
            a_np = rng.standard_normal((m, k)).astype(np.float32)
            b_np = rng.standard_normal((k, n)).astype(np.float32)
            if kind == "positive":
                a_np, b_np = np.abs(a_np), np.abs(b_np)
            a, b = mx.array(a_np), mx.array(b_np)
            ref = measure.SampledReference(a, b)
            fns = {"cublas_tf32": lambda: mx.matmul(a, b), "matmul_tf32": lambda: matmul(a, b, precision="tf32"),
                   "split_tf32": lambda: fp16_emulated(a, b, precision="tf32")}
            errs = {name: ref.error(f()) for name, f in fns.items()}
            if kind == "normal":
                med, _ = rounds(fns, repeats=9 if m * n * k < 8192 ** 3 else 5)
                c = med["cublas_tf32"]
                print(f"tf32 {m}x{n}x{k} one at a time, us: " + ", ".join(f"{k_} {v*1e6:.0f}" for k_, v in med.items())
                      + f"; cuBLAS / matmul {c/med['matmul_tf32']:.2f}x, / split {c/med['split_tf32']:.2f}x")
            print(f"   errors ({kind}): " + ", ".join(f"{k_} {v:.2e}" for k_, v in errs.items()), flush=True)


def spin_node(shape, dtype, ns: int, blocks: int = 132 * 8):
    """One custom-kernel node (compiled, inputs read in place) that holds the
    whole GPU for ``ns`` nanoseconds: a kernel as long as a product at a given
    speed, with MLX's and our costs around it."""
    src = """
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < NS);
    if (t == 0) c[0] = a[0] + b[0];"""
    k = mx.fast.cuda_kernel(name="spin", input_names=["a", "b"], output_names=["c"], source=src,
                            ensure_row_contiguous=False)
    return mx.compile(lambda a, b: k(inputs=[a, b], output_shapes=[shape], output_dtypes=[dtype],
                                     template=[("NS", int(ns))], grid=(blocks * 256, 1, 1),
                                     threadgroup=(256, 1, 1))[0])


BANDWIDTH = 4.8e12  # H200, bytes/s


def spin_rows():
    from mlx_sgemm import matmul
    for m, n, k in ((1, 4096, 4096), (1, 14336, 4096), (4, 4096, 14336), (8, 4096, 4096)):
        x = mx.random.normal((m, k)).astype(mx.bfloat16)
        w = mx.random.normal((n, k)).astype(mx.bfloat16); mx.eval(x, w)
        wt = w.T
        ideal = n * k * 2 / BANDWIDTH
        at100, at80 = spin_node((m, n), mx.bfloat16, ideal * 1e9), spin_node((m, n), mx.bfloat16, ideal / 0.8 * 1e9)
        fns = {"mx_matmul": lambda: mx.matmul(x, wt), "matmul": lambda: matmul(x, wt),
               "node_at_100pct": lambda: at100(x, wt), "node_at_80pct": lambda: at80(x, wt)}
        med, _ = rounds(fns, repeats=15)
        print(f"bf16 {m}x{n}x{k} W.T (W {n*k*2/1e6:.1f} MB, {ideal*1e6:.1f} us at the full bandwidth), us: "
              + ", ".join(f"{k_} {v*1e6:.1f}" for k_, v in med.items())
              + "; mx.matmul / " + ", ".join(f"{k_} {med['mx_matmul']/v:.3f}" for k_, v in med.items() if k_ != "mx_matmul"),
              flush=True)


if __name__ == "__main__":
    {"float32": lambda: squares("float32"), "tf32": lambda: squares("tf32"), "rows": rows, "decode": decode,
     "tf32split": tf32_split, "spin": spin_rows}[MODE]()
