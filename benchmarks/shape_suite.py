"""The shape suite: mlx_sgemm.matmul against mx.matmul at equal precision.

    python benchmarks/shape_suite.py --precision float32 --csv results/shapes.csv
    python benchmarks/shape_suite.py --precision tf32 --csv results/shapes.csv
    python benchmarks/shape_suite.py --dtype float16 bfloat16 --csv results/shapes-half.csv

Shapes: M in {1, 4, 8, 32, 128, 512, 2048} against Akunu's GEMM chapter's 7B-model
projections (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336)}, plus
(1024, 4096), a shape that is a multiple of no tile, batched products, and
x @ W.T with W's transposed view (nn.Linear's layout). Each is timed next to
mx.matmul on the same operands in the same process: alternating rounds (ours,
then mx.matmul; 15 of 5 samples by default) of a median of samples after
warm-up, each side's median round reported. A sample is one product,
evaluated and waited for, as a user calls it (calls "one at a time",
bench.timing.one_call_seconds); --independent
evaluates many independent calls together, which the GPU may run at once
(calls "independent"). "Equal precision": float32 compares with cuBLAS SGEMM
(MLX_ENABLE_TF32=0), tf32 with MLX's default TF32 cuBLAS; MLX reads that
variable once, so the precision is set here before MLX is imported, one
precision per process. --dtype: both operands of each dtype named (float32 by
default); float16 and bfloat16 operands run in a --precision float32 process
only, matmul at its default precision against cuBLAS's half GEMM, which the
variable does not touch (bench.measure says why precision is float32's alone).
Errors are measured on sampled rows against float64 of the operands' values,
mx.matmul's beside ours: on half operands the output's rounding dominates both.
Needs MLX's CUDA backend; rows are appended to --csv (benchmarks/results/shapes-*.csv
are such runs; those without a dtype column are of float32 operands, and
their "one at a time" rows chained each call to the previous one's result
inside one evaluation, timing.one_at_a_time).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

SHAPES_7B = [(m, n, k) for m in (1, 4, 8, 32, 128, 512, 2048)
             for n, k in ((4096, 4096), (14336, 4096), (4096, 14336))]
# (batch, M, N, K, B is a transposed view)
SHAPES = (
    [((), m, n, k, False) for m, n, k in SHAPES_7B]
    + [((), m, 1024, 4096, False) for m in (1, 128, 2048)]
    + [((), 4095, 4097, 4093, False)]
    + [((8,), 512, 1024, 1024, False), ((32,), 128, 128, 4096, False)]
    + [((), m, 4096, 4096, True) for m in (1, 32, 2048)]
)


def time_shape(batch, m, n, k, transposed, dtype, calls, args, device_name) -> dict:
    """One shape's row: matmul and mx.matmul timed side by side on the same
    operands of ``dtype``, their errors on batch entry 0; printed as it goes."""
    import mlx.core as mx

    from mlx_sgemm.bench import accuracy, measure, timing
    from mlx_sgemm.ops import matmul

    a, b = (x.astype(getattr(mx, dtype)) for x in
            accuracy.random_operands((*batch, m, k), (*batch, n, k) if transposed else (*batch, k, n)))
    if transposed:
        b = mx.swapaxes(b, -1, -2)  # W.T: a view, read in place
    mx.eval(a, b)
    ours = lambda: matmul(a, b, precision=args.precision)  # noqa: E731
    theirs = lambda: mx.matmul(a, b)  # noqa: E731
    medians = timing.alternating_medians({"ours": ours, "theirs": theirs}, rounds=args.rounds,
                                         repeats=args.repeats, calls=calls)
    ours_s, theirs_s = medians["ours"], medians["theirs"]
    first = (lambda x: x[0]) if batch else (lambda x: x)  # noqa: E731 (batch entry 0)
    reference = measure.SampledReference(first(a), first(b))
    err, base = reference.error(first(ours())), reference.error(first(theirs()))
    label = (f"{dtype} {'x'.join(map(str, batch)) + ' x ' if batch else ''}{m}x{n}x{k}"
             f"{' W.T' if transposed else ''}")
    print(f"{label:>43s} {ours_s * 1e3:9.3f} {theirs_s * 1e3:9.3f} {theirs_s / ours_s:6.2f} {err:9.2e} {base:9.2e}")
    return {
        "device": device_name, "mlx_version": mx.__version__, "date": datetime.date.today().isoformat(),
        "precision": args.precision, "dtype": dtype, "calls": calls,
        "batch": "x".join(map(str, batch)), "M": m, "N": n, "K": k,
        "b_transposed_view": transposed, "matmul_s": ours_s, "mx_matmul_s": theirs_s,
        "ratio": theirs_s / ours_s, "error": err, "mx_matmul_error": base,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--precision", choices=("float32", "tf32"), default="float32")
    # Many short rounds: one product at a time takes ~0.1 ms, most of it the
    # host's, whose speed drifts by a third within a run; rounds of 10 samples
    # left a shape's ratio to the round it fell in (512x4096x4096 bfloat16:
    # 0.98x in one run, 0.76x in the next, same code). 15 rounds of 5 samples
    # a side cost ~20 ms a shape (docs/performance-log.md, "The shape suite in
    # short rounds").
    parser.add_argument("--repeats", type=int, default=5, help="timed samples per round (median)")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds of ours and mx.matmul")
    calls = parser.add_mutually_exclusive_group()
    calls.add_argument("--independent", action="store_true",
                       help="evaluate many independent calls together (the GPU may overlap them): a throughput")
    calls.add_argument("--one-at-a-time", action="store_true",
                       help="one product per evaluation, waited for: the time of a user's call (the default)")
    parser.add_argument("--dtype", nargs="+", default=["float32"], choices=("float32", "float16", "bfloat16"),
                        dest="dtypes", help="both operands' dtype, one or more (default: float32)")
    parser.add_argument("--csv", default=None)
    args = parser.parse_args(argv)
    if args.precision == "tf32" and args.dtypes != ["float32"]:
        parser.error("--dtype float16 and bfloat16 run with --precision float32: precision is float32 "
                     "operands' alone (their values are exact in float32 and in TF32 alike)")
    os.environ["MLX_ENABLE_TF32"] = "1" if args.precision == "tf32" else "0"

    import mlx.core as mx

    from mlx_sgemm.bench import results, timing
    from mlx_sgemm.dispatch import device

    if device.backend() == device.CPU_FALLBACK:
        print("no GPU backend: nothing to time")
        return 1
    name, rows = device.name(), []
    calls = timing.INDEPENDENT if args.independent else timing.ONE_AT_A_TIME
    print(f"{name}, MLX {mx.__version__}, matmul(precision={args.precision!r}) vs mx.matmul "
          f"(timed {timing.TIMED[calls]})")
    print(f"{'shape':>43s} {'ours ms':>9s} {'mx ms':>9s} {'ratio':>6s} {'err':>9s} {'mx err':>9s}")
    for dtype in args.dtypes:
        for batch, m, n, k, transposed in SHAPES:
            rows.append(time_shape(batch, m, n, k, transposed, dtype, calls, args, name))
    worst = min(rows, key=lambda r: r["ratio"])
    print(f"lowest ratio {worst['ratio']:.2f} at {worst['dtype']} {worst['M']}x{worst['N']}x{worst['K']}; "
          f"{sum(r['ratio'] >= 0.8 for r in rows)}/{len(rows)} shapes at >= 0.8x")
    return 0 if not args.csv or results.append_rows(rows, args.csv) else 1


if __name__ == "__main__":
    sys.exit(main())
