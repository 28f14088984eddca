"""The shape suite: mlx_sgemm.matmul against mx.matmul at equal precision.

    python benchmarks/shape_suite.py --precision float32 --csv results/shapes.csv
    python benchmarks/shape_suite.py --precision tf32 --csv results/shapes.csv

Shapes: M in {1, 4, 8, 32, 128, 512, 2048} against Akunu's GEMM chapter's 7B-model
projections (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336)}, plus
(1024, 4096), a shape that is a multiple of no tile, batched products, and
x @ W.T with W's transposed view (nn.Linear's layout). Each is timed next to
mx.matmul in the same process: alternating rounds (ours, then mx.matmul) of a
median of samples after warm-up, each side's median round reported. A sample
evaluates many independent calls together, which the GPU may run at once;
--one-at-a-time chains each call to the previous one's result instead. "Equal precision":
float32 compares with cuBLAS SGEMM (MLX_ENABLE_TF32=0), tf32 with MLX's default
TF32 cuBLAS; MLX reads that variable once, so the precision is set here before
MLX is imported, one precision per process. Errors are measured on sampled rows
against float64. Needs MLX's CUDA backend; rows are appended to --csv
(benchmarks/results/shapes-*.csv are such runs).
"""

from __future__ import annotations

import argparse
import csv
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--precision", choices=("float32", "tf32"), default="float32")
    parser.add_argument("--repeats", type=int, default=10, help="timed samples per round (median)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours and mx.matmul")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="each call waits for the previous one's result (timing.one_at_a_time): "
                             "the time of one product, not the throughput of independent ones")
    parser.add_argument("--csv", default=None)
    args = parser.parse_args(argv)
    os.environ["MLX_ENABLE_TF32"] = "1" if args.precision == "tf32" else "0"

    import mlx.core as mx

    from mlx_sgemm.bench import accuracy, measure, timing
    from mlx_sgemm.dispatch import device
    from mlx_sgemm.ops import matmul

    if device.backend() == device.CPU_FALLBACK:
        print("no GPU backend: nothing to time")
        return 1
    name, rows = device.name(), []
    calls = "one at a time" if args.one_at_a_time else "independent calls, evaluated together"
    print(f"{name}, MLX {mx.__version__}, matmul(precision={args.precision!r}) vs mx.matmul ({calls})")
    print(f"{'shape':>34s} {'ours ms':>9s} {'mx ms':>9s} {'ratio':>6s} {'err':>9s} {'mx err':>9s}")
    for batch, m, n, k, transposed in SHAPES:
        a, b = accuracy.random_operands((*batch, m, k), (*batch, n, k) if transposed else (*batch, k, n))
        if transposed:
            b = mx.swapaxes(b, -1, -2)  # W.T: a view, read in place
        mx.eval(a, b)
        ours = lambda: matmul(a, b, precision=args.precision)  # noqa: E731
        theirs = lambda: mx.matmul(a, b)  # noqa: E731
        if args.one_at_a_time:
            ours = timing.one_at_a_time(lambda x, y: matmul(x, y, precision=args.precision), a, b)
            theirs = timing.one_at_a_time(mx.matmul, a, b)
        medians = timing.alternating_medians({"ours": ours, "theirs": theirs},
                                             rounds=args.rounds, repeats=args.repeats)
        ours_s, theirs_s = medians["ours"], medians["theirs"]
        first = (lambda x: x[0]) if batch else (lambda x: x)  # noqa: E731 (batch entry 0)
        err = measure.sampled_error(first(ours()), first(a), first(b))
        base = measure.sampled_error(first(theirs()), first(a), first(b))
        label = f"{'x'.join(map(str, batch)) + ' x ' if batch else ''}{m}x{n}x{k}{' W.T' if transposed else ''}"
        print(f"{label:>34s} {ours_s * 1e3:9.3f} {theirs_s * 1e3:9.3f} {theirs_s / ours_s:6.2f} {err:9.2e} {base:9.2e}")
        rows.append({
            "device": name, "mlx_version": mx.__version__, "date": datetime.date.today().isoformat(),
            "precision": args.precision, "calls": "one at a time" if args.one_at_a_time else "independent",
            "batch": "x".join(map(str, batch)), "M": m, "N": n, "K": k,
            "b_transposed_view": transposed, "matmul_s": ours_s, "mx_matmul_s": theirs_s,
            "ratio": theirs_s / ours_s, "error": err, "mx_matmul_error": base,
        })
    worst = min(rows, key=lambda r: r["ratio"])
    print(f"lowest ratio {worst['ratio']:.2f} at {worst['M']}x{worst['N']}x{worst['K']}; "
          f"{sum(r['ratio'] >= 0.8 for r in rows)}/{len(rows)} shapes at >= 0.8x")
    if args.csv:
        new = not os.path.exists(args.csv)
        if not new:
            with open(args.csv, newline="") as f:
                header = next(csv.reader(f), None)
            if header != list(rows[0]):
                print(f"{args.csv} has other columns ({header}): not appended; name a new file")
                return 1
        with open(args.csv, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
