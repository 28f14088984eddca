"""Command line: ``python -m mlx_sgemm bench [--size N] [--kernels ...]``."""

from __future__ import annotations

import argparse
import sys

from . import bench, device, specs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlx-sgemm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("bench", help="time every stage next to mx.matmul")
    b.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    b.add_argument(
        "--kernels", nargs="+", default=list(specs.STAGES), choices=specs.STAGES,
        metavar="KERNEL", help=f"stages to time (default all: {', '.join(specs.STAGES)})",
    )
    b.add_argument("--repeats", type=int, default=20, help="timed runs per kernel")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        if device.backend() == device.CPU_FALLBACK:
            print(
                "No GPU: MLX here has neither a Metal nor a CUDA backend, so the "
                "kernels cannot run (every op falls back to mx.matmul on the CPU)."
            )
            return 0
        name, rows = bench.run(args.size, args.kernels, args.repeats)
        print(f"{name}, {args.size}x{args.size}x{args.size} float32, median of {args.repeats} runs")
        print(bench.format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
