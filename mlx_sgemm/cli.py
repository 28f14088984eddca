"""Command line: ``python -m mlx_sgemm bench`` (also the ``mlx-sgemm`` script).

With a GPU it measures every kernel next to mx.matmul over a sweep of sizes and
writes a CSV and three plots under ``--out``. Without one it says so and shows
the newest run recorded on a real GPU (benchmarks/results/), labelled as such.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is M,N,K (three integers), got {text!r}") from None
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"M, N and K must be >= 1, got {text!r}")
    return m, n, k


def positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .bench.measure import KERNELS, PRECISIONS

    parser = argparse.ArgumentParser(prog="mlx-sgemm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("bench", help="time every kernel next to mx.matmul")
    b.add_argument("--sizes", nargs="+", type=int, default=None, metavar="N",
                   help="square sizes M = N = K (default 256 512 ... 8192)")
    b.add_argument("--size", type=int, default=None, help="one square size (same as --sizes N)")
    b.add_argument("--shapes", nargs="+", type=shape, default=[], metavar="M,N,K",
                   help="further problem shapes, e.g. 1,4096,4096")
    b.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS, metavar="KERNEL",
                   help=f"kernels to time (default all: {' '.join(KERNELS)})")
    b.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS,
                   help="precisions for the adaptive matmul (tf32 on CUDA only)")
    b.add_argument("--repeats", type=int, default=20, help="timed runs per measurement (median)")
    b.add_argument("--peak-gflops", type=positive, default=None, help="override the device's FP32 peak")
    b.add_argument("--bandwidth", type=positive, default=None, help="override its memory bandwidth, GB/s")
    b.add_argument("--out", type=Path, default=Path("outputs"), help="where the CSV and plots go")
    b.add_argument("--recorded", action="store_true",
                   help="show the newest recorded run even if a GPU is present")
    b.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def bench(args) -> int:
    from .bench import plots, sweep, tables

    try:
        run = sweep.collect(
            sizes=args.sizes or ([args.size] if args.size else sweep.DEFAULT_SIZES),
            shapes=args.shapes, kernels=args.kernels, precisions=args.precisions,
            repeats=args.repeats, peak_gflops=args.peak_gflops, bandwidth=args.bandwidth,
            out=args.out, force_recorded=args.recorded, progress=not args.quiet,
        )
    except FileNotFoundError as e:
        print(e)
        return 1
    print(run.note)
    print(tables.tables(run.rows))
    if not args.no_plots:
        for path in plots.write_all(run.rows, args.out, run.recorded, run.peak_gflops, run.bandwidth_gbs):
            print(f"Plot: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        return bench(args)
    return 2

