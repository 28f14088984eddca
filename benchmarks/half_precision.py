"""Half-precision operands (chapter 8): matmul against mx.matmul at the same dtype,
one product per evaluation, and half_wgmma's block shapes and K splits.

    python benchmarks/half_precision.py --csv results/half-precision.csv
    python benchmarks/half_precision.py --variants   # every block shape and split
    python benchmarks/half_precision.py --half-mma   # and half_mma, as a GPU without wgmma runs it
    python benchmarks/half_precision.py --gemv-variants  # M <= 8: half_gemv's variants and small_m

Shapes: the shape suite's LLM projections, M in {1, 4, 8, 32, 128, 512, 2048}
against (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336)}, plus 4096^3
and 8192^3, as ``x @ W.T`` (W's transposed view, how nn.Linear runs it) and
with a row-major B. Timed two ways, ours and mx.matmul in alternating rounds
in one process, the median round reported: each call evaluated alone and
waited for (one product per evaluation, synchronized: what a caller who needs
the result waits), and chained (each call waits on the GPU for the previous
one's result, many evaluated together: the GPU's time of one product, without
the host's ~60-90 us of evaluation and synchronization a call). Error: sampled rows of C against
float64, normalized by || |A||B| ||_F, ours and mx.matmul's. For M <= 8 the
bytes of W read per second are reported too, from 8 products by distinct
weights evaluated together (more bytes than the L2 holds). Needs MLX's CUDA backend.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math

SHAPES = ([(m, n, k) for m in (1, 4, 8, 32, 128, 512, 2048) for n, k in ((4096, 4096), (14336, 4096), (4096, 14336))]
          + [(4096, 4096, 4096), (8192, 8192, 8192)])
DTYPES = ("bfloat16", "float16")


# half_gemv's (NT, WARPS, IN_FLIGHT, MIN_BLOCKS) variants beside matmul's choice (--gemv-variants).
GEMV_VARIANTS = ((2, 16, 2, 1), (2, 8, 2, 2), (2, 16, 1, 1), (1, 8, 2, 4))

# Weights read at once for the bandwidth figure: more bytes than the L2 holds,
# so no product finds its W there.
WEIGHTS = 8


def weight_rates(products: dict, a, n: int, k: int, layout: str, dtype: str) -> dict[str, float]:
    """GB/s of W read by each product (a token's: M <= 8): WEIGHTS products of
    ``a`` by distinct weights evaluated together. A throughput: their launches
    overlap, and so may the kernels on the GPU, so it is not one kernel's own
    rate (benchmarks/ncu_small_m.py times that)."""
    import mlx.core as mx
    import numpy as np

    from mlx_sgemm.bench import timing

    rng = np.random.default_rng(2)
    ws = [mx.array(rng.standard_normal((n, k)).astype(np.float32)).astype(getattr(mx, dtype)) for _ in range(WEIGHTS)]
    bs = [w.T if layout == "transposed" else mx.contiguous(w.T) for w in ws]
    mx.eval(*bs)
    rates = {}
    for name, product in products.items():
        seconds = timing.median_seconds(lambda product=product: mx.stack([product(a, b) for b in bs]), repeats=10)
        rates[name] = WEIGHTS * n * k * a.itemsize / seconds / 1e9
    return rates


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--layouts", nargs="+", choices=("transposed", "row-major"), default=["transposed", "row-major"])
    parser.add_argument("--variants", action="store_true", help="also time each half_wgmma block shape and split")
    parser.add_argument("--half-mma", action="store_true",
                        help="also time half_mma (mma.sync) as matmul launches it on a GPU without wgmma (M > 8)")
    parser.add_argument("--gemv-variants", action="store_true",
                        help="M <= 8: also time half_gemv's warps and loads in flight, and the small-M "
                             "kernel converting on load that a GPU without mma.sync runs")
    parser.add_argument("--shapes", nargs="+", default=None, metavar="M,N,K")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--csv", default=None)
    args = parser.parse_args(argv)

    import mlx.core as mx
    import numpy as np

    from mlx_sgemm import ops
    from mlx_sgemm.bench import measure, timing
    from mlx_sgemm.build import launcher, specs
    from mlx_sgemm.dispatch import device, kernel_choice
    from mlx_sgemm.dispatch.problem import plan

    if device.backend() != device.CUDA:
        print("no CUDA GPU: nothing to time")
        return 1
    shapes = [tuple(map(int, s.split(","))) for s in args.shapes] if args.shapes else SHAPES
    name = device.name()
    bandwidth = measure.device_peak().bandwidth_gbs
    print(f"{name}, MLX {mx.__version__}: matmul vs mx.matmul at the same dtype, one product per evaluation")
    print(f"{'dtype':>8s} {'layout':>10s} {'shape':>18s} {'kernel':>26s} {'ours us':>9s} {'mx us':>8s} "
          f"{'ratio':>6s} {'chained':>8s} {'mx':>8s} {'ratio':>6s} {'err':>8s} {'mx err':>8s} {'W GB/s':>7s}")
    for dtype in args.dtype:
        for layout in args.layouts:
            for m, n, k in shapes:
                rng = np.random.default_rng(0)
                a = mx.array(rng.standard_normal((m, k)).astype(np.float32)).astype(getattr(mx, dtype))
                w = mx.array(rng.standard_normal((n, k)).astype(np.float32)).astype(getattr(mx, dtype))
                b = w.T if layout == "transposed" else mx.contiguous(w.T)
                mx.eval(a, b)
                route = ops.route_plan(kernel_choice.chooser("float32"), device.CUDA, a.shape, b.shape, True,
                                       (dtype, dtype))[-1]
                products = {"ours": ops.matmul, "mx": mx.matmul}
                chosen = f"{route.spec.stage}[{route.spec.block_m}x{route.spec.block_n}]/{route.k_splits}"
                if args.variants and route.spec.stage == "half_wgmma":
                    p = plan(a.shape, b.shape)
                    for bm, bn in specs.HALF_WGMMA_BLOCKS:
                        tiles = math.prod(p.tiles(bm, bn))
                        for splits in sorted({1, max(1, min(132 // tiles, k // 1024))}):
                            out = dtype if splits == 1 else "float32"
                            spec = kernel_choice._half_spec(dtype, out, bm, bn)
                            products[f"half_wgmma[{bm}x{bn}]/{splits}"] = (
                                lambda x, y, spec=spec, splits=splits:
                                launcher.launch(spec, x, y, k_splits=splits).astype(x.dtype))
                if args.half_mma and m > kernel_choice.SMALL_M:
                    mma = kernel_choice.half_launch(plan(a.shape, b.shape), dtype, wgmma=False)
                    products[f"half_mma[{mma.spec.block_m}x{mma.spec.block_n}]/{mma.k_splits}"] = (
                        lambda x, y, mma=mma: launcher.launch(mma.spec, x, y, k_splits=mma.k_splits))
                if args.gemv_variants and m <= kernel_choice.SMALL_M:
                    for nt, warps, in_flight, min_blocks in GEMV_VARIANTS:
                        spec = specs.cuda_half_gemv(dtype, NT=nt, WARPS=warps, IN_FLIGHT=in_flight,
                                                    MIN_BLOCKS=min_blocks)
                        products[f"half_gemv[N{nt},W{warps},F{in_flight},B{min_blocks}]"] = (
                            lambda x, y, spec=spec: launcher.launch(spec, x, y))
                    small = kernel_choice.heuristic(device.CUDA, "float32", plan(a.shape, b.shape))
                    small_spec = small.spec.reading(dtype, dtype).rounding_to(dtype)
                    products[f"{small_spec.stage}[{small_spec.block_m}x{small_spec.block_n}]"] = (
                        lambda x, y, spec=small_spec: launcher.launch(spec, x, y))
                fns = {name: (lambda f=f: f(a, b)) for name, f in products.items()}
                times = timing.alternating_medians(fns, rounds=args.rounds, repeats=args.repeats,
                                                   calls=timing.ONE_AT_A_TIME)
                # Chained: each call waits on the GPU for the previous one's
                # result, many evaluated together (timing.one_at_a_time): the
                # GPU's time of one product, without the host's wait for each.
                chained = timing.alternating_medians(
                    {name: timing.one_at_a_time(f, a, b) for name, f in products.items()},
                    rounds=args.rounds, repeats=args.repeats, calls=timing.INDEPENDENT)
                ref_rows = np.random.default_rng(1).choice(m, size=min(m, 64), replace=False)
                a64 = np.array(a.astype(mx.float32), np.float64)[ref_rows]
                b64 = np.array(b.astype(mx.float32), np.float64)
                ref, scale = a64 @ b64, np.linalg.norm(np.abs(a64) @ np.abs(b64))

                def error(c):
                    c = np.array(c.astype(mx.float32), np.float64)[ref_rows]
                    assert np.isfinite(c).all()
                    return float(np.linalg.norm(c - ref) / scale)

                errors = {name: error(fn()) for name, fn in fns.items()}
                rates = weight_rates(products, a, n, k, layout, dtype) if m <= 8 else {}
                for kernel, seconds in times.items():
                    if kernel == "mx":
                        continue
                    label = chosen if kernel == "ours" else kernel
                    w_rate = rates.get(kernel)
                    row = dict(device=name, mlx_version=mx.__version__, date=datetime.date.today().isoformat(),
                               dtype=dtype, layout=layout, M=m, N=n, K=k, kernel=label,
                               chosen=kernel == "ours", calls="one at a time",
                               seconds=seconds, mx_seconds=times["mx"], x_matmul=times["mx"] / seconds,
                               chained_seconds=chained[kernel], mx_chained_seconds=chained["mx"],
                               chained_x_matmul=chained["mx"] / chained[kernel],
                               tflops=2 * m * n * k / seconds / 1e12, error=errors[kernel], mx_error=errors["mx"],
                               w_gbs=w_rate, w_pct_bandwidth=None if w_rate is None else 100 * w_rate / bandwidth,
                               mx_w_gbs=rates.get("mx"))
                    append_row(args.csv, row)
                    w_text = "" if w_rate is None else f"{w_rate:7.0f} (mx {rates['mx']:.0f})"
                    print(f"{dtype:>8s} {layout:>10s} {f'{m}x{n}x{k}':>18s} {label:>26s} {seconds * 1e6:9.1f} "
                          f"{times['mx'] * 1e6:8.1f} {row['x_matmul']:6.2f} {chained[kernel] * 1e6:8.1f} "
                          f"{chained['mx'] * 1e6:8.1f} {row['chained_x_matmul']:6.2f} {errors[kernel]:8.1e} "
                          f"{errors['mx']:8.1e} {w_text}",
                          flush=True)
    return 0


def append_row(path: str | None, row: dict) -> None:
    """Append one row to the CSV at ``path`` (a header first if it is new): a
    run cut short keeps what it measured."""
    if path:
        with open(path, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(row))
            if f.tell() == 0:
                writer.writeheader()
            writer.writerow(row)


if __name__ == "__main__":
    raise SystemExit(main())
