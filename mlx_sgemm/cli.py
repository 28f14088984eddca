"""Command line: the ``mlx-sgemm`` script (also ``python -m mlx_sgemm``).

Its ``--help`` text is :data:`DESCRIPTION` and :data:`EPILOG`, plain text for a terminal.
Arguments are checked before anything runs: a bad one is a one-line error
(``mlx-sgemm: error: argument --sizes: must be >= 1, got 0``) and exit status
2; so is a bare ``mlx-sgemm``, which prints the usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from pathlib import Path

PROG = "mlx-sgemm"

DESCRIPTION = "SGEMM kernels for MLX: every stage of the optimization journey, and matmul, which picks one."
EPILOG = """\
Without a GPU, bench shows the newest run recorded on a real GPU (benchmarks/results/),
labelled as such, and explain plans for the GPU named by --backend.

examples:
  mlx-sgemm bench --sizes 1024 4096
  mlx-sgemm bench --dtype float32 bfloat16 --independent
  mlx-sgemm explain 4096x4096x4096 --backend cuda
  mlx-sgemm bench --help
"""
class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; each option's default shown where it has one
    (not for flags, nor where its help already says it)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.default not in (None, False, [], argparse.SUPPRESS) and "default" not in text
                and action.option_strings):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """argparse, its errors one line: the usage it would print first is what
    ``--help`` is for, and a script reading stderr wants the reason alone."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)  # subcommands' parsers too
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{PROG}: error: {message}\n")


def shape(text: str) -> tuple[int, int, int]:
    """M,N,K or MxNxK, each >= 1."""
    try:
        m, n, k = (int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is M,N,K or MxNxK (three integers), got {text!r}") from None
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"M, N and K must be >= 1, got {text!r}")
    return m, n, k


def at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def version_text() -> str:
    import mlx.core as mx

    from . import __version__

    return f"mlx-sgemm {__version__} (MLX {mx.__version__})"


def build_parser() -> argparse.ArgumentParser:
    from .bench.measure import DTYPES, HALF_PRECISION, KERNELS, PRECISIONS
    from .bench.sweep import REPEATS

    parser = Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=version_text())
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    b = commands.add_parser("bench", help="time every kernel next to mx.matmul; write a CSV and three plots "
                                          "(no GPU: the newest recorded run)")
    sizes = b.add_mutually_exclusive_group()
    sizes.add_argument("--sizes", nargs="+", type=at_least_one, default=None, metavar="N",
                       help="square sizes M = N = K (default 256 512 ... 8192)")
    sizes.add_argument("--size", type=at_least_one, default=None, help="one square size (same as --sizes N)")
    b.add_argument("--shapes", nargs="+", type=shape, default=[], metavar="M,N,K",
                   help="further problem shapes, e.g. 1,4096,4096")
    b.add_argument("--kernels", nargs="+", default=None, choices=KERNELS, metavar="KERNEL",
                   help=f"kernels to time (default all: {' '.join(KERNELS)})")
    b.add_argument("--precisions", nargs="+", default=None, choices=PRECISIONS,
                   help="precisions for the adaptive matmul on float32 operands (default all; tf32 on CUDA "
                        f"only); float16 and bfloat16 operands run once, matmul at its default precision "
                        f"(recorded as {HALF_PRECISION}): their values are exact in float32 and in TF32 alike")
    b.add_argument("--dtype", nargs="+", default=["float32"], choices=DTYPES, dest="dtypes", metavar="DTYPE",
                   help=f"the operands' dtype, both a and b, one or more of {' '.join(DTYPES)}; mx.matmul runs on "
                        "the same operands (default: float32)")
    # Given without N: 0, which no N can be (argparse would pass a str const through type).
    b.add_argument("--independent", nargs="?", type=at_least_one, const=0, default=None, metavar="N",
                   help="time N independent products per evaluation, which the GPU may overlap (without N: as many "
                        "as last about 5 ms); default: one product per evaluation, waited for, as a user calls it "
                        "(the CSV's calls column: independent or one at a time)")
    b.add_argument("--repeats", type=at_least_one, default=None,
                   help=f"timed runs per measurement, their median kept (default: {REPEATS}; live runs only)")
    b.add_argument("--peak-gflops", type=positive, default=None, help="override the device's FP32 peak, GFLOP/s (default: its datasheet's)")
    b.add_argument("--bandwidth", type=positive, default=None, help="override its memory bandwidth, GB/s (default: its datasheet's)")
    b.add_argument("--out", type=Path, default=Path("outputs"), help="where the CSV and plots go")
    b.add_argument("--recorded", action="store_true",
                   help="show the newest recorded run even if a GPU is present (a recorded run shows the rows "
                        "--sizes, --shapes, --kernels, --precisions, --dtype and --independent ask for; all shapes, "
                        "kernels and precisions by default, timed one at a time where it has such rows)")
    b.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.add_argument("--json", action="store_true", help="print the rows as JSON, nothing else")
    e = commands.add_parser("explain", help="what matmul would run for a product, and why "
                                            "(launches nothing; no GPU: add --backend cuda)")
    e.add_argument("shapes", nargs="+", type=shape, metavar="MxNxK", help="e.g. 1x4096x4096")
    e.add_argument("--precision", default="float32", choices=PRECISIONS)
    e.add_argument("--deterministic", action="store_true", help="plan matmul(..., deterministic=True)")
    e.add_argument("--backend", choices=("cuda", "metal"), default=None,
                   help="plan for this backend (default: this machine's; on a machine without a GPU, "
                        "name one)")
    e.add_argument("--transposed-b", action="store_true", help="B is a transposed view (x @ W.T)")
    e.add_argument("--layer", action="store_true",
                   help="the product of a model's layer (mlx_sgemm.nn.Linear: x @ W.T), whose kernels differ "
                        "for a token's half products")
    e.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"),
                   help="both operands' dtype: a pair of one half type is multiplied as it is (CUDA's tensor "
                        "cores, Metal's half tiles) or converted to float32 on load, by kernel")
    e.add_argument("--json", action="store_true", help="print the plans as JSON")
    from .metal_check.command import add_parser as add_check_kernel

    add_check_kernel(commands)
    return parser


def _writable_directory(parser: argparse.ArgumentParser, out: Path) -> None:
    """Fail now, not after the sweep: --out must be (or become) a writable folder."""
    if out.exists() and not out.is_dir():
        parser.error(f"argument --out: {out} is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        parser.error(f"argument --out: cannot create {out}: {e.strerror or e}")
    if not os.access(out, os.W_OK):
        parser.error(f"argument --out: {out} is not writable")


def bench(parser: argparse.ArgumentParser, args) -> int:
    from .bench import sweep, tables

    _writable_directory(parser, args.out)
    independent = args.independent is not None
    try:
        run = sweep.collect(
            sizes=args.sizes or ([args.size] if args.size else None),
            shapes=args.shapes, kernels=args.kernels, precisions=args.precisions,
            repeats=args.repeats, peak_gflops=args.peak_gflops, bandwidth=args.bandwidth,
            out=args.out, force_recorded=args.recorded,
            progress=not (args.quiet or args.json) and sys.stderr.isatty(),
            dtypes=args.dtypes, calls="independent" if independent else None,
            per_evaluation=args.independent or None,  # None: as many as last about 5 ms
        )
    except (FileNotFoundError, sweep.NoRecordedRows) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if run.recorded and args.repeats is not None:
        run.note += (f" --repeats applies to live runs only: the recorded rows are medians of "
                     f"{sweep.REPEATS} runs each.")
    if args.json:
        print(json.dumps({"note": run.note, "recorded": run.recorded,
                          "csv": str(run.csv) if run.csv else None,
                          "source": str(run.source) if run.source else None, "rows": run.rows}, indent=1))
    else:
        print(run.note)
        print(tables.tables(run.rows))
    if not args.no_plots:
        _plots(run, args.out, quiet=args.json)
    return 0


def _plots(run, out: Path, quiet: bool) -> None:
    try:
        from .bench import plots
    except ModuleNotFoundError as e:  # matplotlib is the bench extra's
        if (e.name or "").partition(".")[0] != "matplotlib":
            raise
        print(f'{PROG}: plots skipped: matplotlib is not installed (pip install "mlx-sgemm[bench]" gives them)',
              file=sys.stderr)
        return
    for path in plots.write_all(run.rows, out, run.recorded, run.peak_gflops, run.bandwidth_gbs):
        if not quiet:
            print(f"Plot: {path}")


def explain(args) -> int:
    from .explain import explain as plan

    plans = [plan((m, k), (k, n), precision=args.precision, deterministic=args.deterministic,
                  backend=args.backend, b_transposed=args.transposed_b, dtype=args.dtype, layer=args.layer)
             for m, n, k in args.shapes]
    if args.json:
        print(json.dumps([dataclasses.asdict(p) for p in plans], indent=1, default=str))
    else:
        print("\n\n".join(str(p) for p in plans))
        if any(p.backend == "cpu-fallback" for p in plans):
            shapes = " ".join("x".join(map(str, s)) for s in args.shapes)
            print(f"\nNo GPU here, so MLX's CPU backend computes every op with mx.matmul. What a GPU runs:\n"
                  f"  {PROG} explain {shapes} --backend cuda    (an NVIDIA Hopper GPU)\n"
                  f"  {PROG} explain {shapes} --backend metal   (an Apple GPU)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line; a closed pipe (``mlx-sgemm bench | head``) ends it quietly."""
    try:
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            if args.command is None:  # a bare mlx-sgemm: what it can do, and a usage error's status
                parser.print_help(sys.stderr)
                return 2
            if args.command == "check-kernel":
                from .metal_check.command import run_command

                return run_command(parser, args)
            return bench(parser, args) if args.command == "bench" else explain(args)
        finally:
            # Flushed here, where a reader gone away is caught, not at exit;
            # also on argparse's exits (--help, --version), which raise SystemExit.
            sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the failed flush of stdout at exit: point stdout
        # at nothing first (the recipe of the Python docs, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
