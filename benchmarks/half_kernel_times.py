"""The GPU time of one half-precision product's kernels, ours against cuBLAS's:
what a product costs the GPU, without the host's launch and wait.

    python benchmarks/half_kernel_times.py --csv benchmarks/results/half-kernel-times-DATE-DEVICE.csv \\
        [--dtype bfloat16] [--shapes 512,4096,4096 ...] [--kernels mx ours wgmma:128x128 wgmma:128x256/2 gemv:16x1]
        [--hot]

Each product is ``x @ W.T`` (W read in place) of random operands, the weights
taken in turn from copies that together pass the L2 cache (256 MB), so no call
finds its W there, as in a model's step; with ``--hot`` one W, which a W of up
to some 40 MB keeps in L2 from call to call, as in the shape suite. Each
kernel (``mx``: mx.matmul; ``ours``: matmul as it chooses;
``wgmma:BMxBN[/SPLITS]``: half_wgmma launched directly with that block and K
split; ``gemv:WxB[xF[xNT[xR]]]``: half_gemv with W warps a block, registers for B
blocks an SM, F chunks in flight, 16 NT columns a block, R loads in flight a lane on its
one-row way) is evaluated alone
EVALUATIONS times, waited for each time, under PyTorch's profiler, whose
CUPTI tracing sees MLX's kernels (PyTorch is on the GPU machine); a row a
(shape, kernel): the median and least GPU time of an evaluation's kernels and
their names (cuBLAS's name its tile), and whether W stayed in L2 (``--hot``).
CUDA only.
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import sys

SHAPES = ("128,4096,4096", "512,4096,4096", "512,11008,4096", "1024,11008,4096", "512,4096,11008", "512,14336,4096",
          "2048,4096,4096")
KERNELS = ("mx", "ours", "wgmma:128x128", "wgmma:128x192", "wgmma:128x256", "wgmma:64x256")
EVALUATIONS = 12
WEIGHT_BYTES = 256 * 2**20


def evaluation_times(events: list[dict], evaluations: int) -> list[float]:
    """A profiler trace (Chrome format) of ``evaluations`` evaluations, each
    launching the same kernels: the GPU time of each evaluation's kernels (us),
    its kernels taken in the order they started."""
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    if not kernels or len(kernels) % evaluations:
        raise ValueError(f"{len(kernels)} kernels in the trace do not split into {evaluations} evaluations")
    each = len(kernels) // evaluations
    return [sum(e["dur"] for e in kernels[i:i + each]) for i in range(0, len(kernels), each)]


def kernel_names(events: list[dict]) -> str:
    """The distinct kernels of a trace, their names without arguments, joined by ' | '."""
    return " | ".join(sorted({e["name"].split("(")[0] for e in events if e.get("cat") == "kernel"}))


def product(kernel: str, dtype: str):
    """(a, b) -> a @ b by the named kernel (see the module's docstring)."""
    import mlx.core as mx

    from mlx_sgemm import ops
    from mlx_sgemm.build import launcher, specs
    from mlx_sgemm.dispatch import kernel_choice

    if kernel == "mx":
        return mx.matmul
    if kernel == "ours":
        return ops.matmul
    if kernel.startswith("wgmma:"):
        block, _, splits = kernel.removeprefix("wgmma:").partition("/")
        bm, bn = map(int, block.split("x"))
        splits = int(splits or 1)
        if splits == 1:
            spec = kernel_choice._half_spec(dtype, dtype, bm, bn)
            return lambda a, b: launcher.launch(spec, a, b)
        spec = kernel_choice._half_spec(dtype, "float32", bm, bn, sum_to=dtype)
        return lambda a, b: launcher.launch(spec, a, b, k_splits=splits)
    if kernel.startswith("gemv:"):
        warps, min_blocks, in_flight, nt, one_row = (*map(int, kernel.removeprefix("gemv:").split("x")), 2, 2, 8)[:5]
        spec = specs.cuda_half_gemv(dtype, dtype, WARPS=warps, MIN_BLOCKS=min_blocks, IN_FLIGHT=in_flight, NT=nt,
                                    ONE_ROW=one_row)
        return lambda a, b: launcher.launch(spec, a, b)
    raise ValueError(f"unknown kernel {kernel!r}: mx, ours, wgmma:BMxBN[/SPLITS] or "
                     "gemv:WARPSxMIN_BLOCKS[xIN_FLIGHT[xNT[xONE_ROW]]]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), metavar="M,N,K")
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS))
    parser.add_argument("--csv", default=None)
    parser.add_argument("--hot", action="store_true", help="one W, left in L2 from call to call")
    args = parser.parse_args(argv)

    import torch  # noqa: F401 (the profiler's CUPTI)
    from torch.profiler import ProfilerActivity, profile

    import mlx.core as mx

    from mlx_sgemm.bench import measure, results, traces
    from mlx_sgemm.dispatch import device

    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend")
        return 1
    dt = getattr(mx, args.dtype)
    rows = []
    for shape in args.shapes:
        m, n, k = map(int, shape.split(","))
        copies = 1 if args.hot else max(1, min(64, -(-WEIGHT_BYTES // (n * k * dt.size))))
        a = mx.random.normal((m, k)).astype(dt)
        weights = [mx.random.normal((n, k)).astype(dt) for _ in range(copies)]
        mx.eval(a, *weights)
        print(f"== {args.dtype} {m}x{n}x{k} x @ W.T ({copies} weights in turn)", flush=True)
        cublas = None
        for name in args.kernels:
            fn = product(name, args.dtype)
            for i in range(3):
                mx.eval(fn(a, weights[i % copies].T))
            mx.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for i in range(EVALUATIONS):
                    mx.eval(fn(a, weights[i % copies].T))
                    mx.synchronize()
            events = traces.profiler_events(prof)
            times = evaluation_times(events, EVALUATIONS)
            median = statistics.median(times)
            cublas = median if name == "mx" else cublas
            row = dict(device=device.name(), mlx_version=mx.__version__, date=datetime.date.today().isoformat(),
                       commit=measure.source_commit(), dtype=args.dtype, M=m, N=n, K=k, w_in_l2=args.hot,
                       kernel=name,
                       median_us=round(median, 2), least_us=round(min(times), 2),
                       tflops=round(2 * m * n * k / median / 1e6, 1),
                       x_mx=round(cublas / median, 3) if cublas else "", kernel_names=kernel_names(events))
            rows.append(row)
            print(f"  {name:16s} {median:8.2f} us (least {min(times):.2f})  {row['tflops']:6.1f} TFLOP/s  "
                  f"x mx {row['x_mx'] or '-'}  {row['kernel_names'][:90]}", flush=True)
    return 0 if not args.csv or results.append_rows(rows, args.csv) else 1


if __name__ == "__main__":
    sys.exit(main())
