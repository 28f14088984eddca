"""``mlx-sgemm check-kernel``: a Metal kernel body, as MLX's metal_kernel takes
it, run and checked on the CPU from the command line.

    mlx-sgemm check-kernel softmax.metal --grid 256,4,1 --threadgroup 256,1,1 \\
        --inputs x=x.npy --outputs out:4x256:float32

The file holds what ``source=`` would (the body; ``--header`` a file for
``header=``). Inputs are ``name=file.npy`` (or ``name=<number>`` for a scalar:
an int is int32, a float float32, as MLX converts Python numbers), in the
kernel's input order; outputs ``name:shape:dtype`` (shape ``4x256`` or
``4,256``). Exit status: 0 when every check passes, 1 when one finds a
problem in the kernel, 2 when there is no verdict: bad arguments, a kernel
that does not compile (or uses what the checker does not model), no compiler.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z_]\w*$")

# Exit statuses: a verdict (clean, findings), or none (the kernel could not be run).
CLEAN, FINDINGS, NO_VERDICT = 0, 1, 2


def _triple(text: str) -> tuple[int, int, int]:
    try:
        values = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"three integers X,Y,Z, got {text!r}") from None
    if len(values) == 1:
        values = (values[0], 1, 1)
    if len(values) != 3 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"three integers >= 1 (X,Y,Z), got {text!r}")
    return values  # type: ignore[return-value]


def _identifier(text: str, what: str) -> str:
    if not _NAME.match(text):
        raise argparse.ArgumentTypeError(f"{what} must be an identifier, got {text!r}")
    return text


def _input(text: str):
    """name=file.npy or name=<number>."""
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"an input is NAME=FILE.npy or NAME=NUMBER, got {text!r}")
    _identifier(name, "an input's name")
    if value.endswith(".npy"):
        path = Path(value)
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"{value}: no such file")
        return name, path
    for parse in (int, float):
        try:
            return name, parse(value)
        except ValueError:
            pass
    raise argparse.ArgumentTypeError(f"input {name}: {value!r} is neither a .npy file nor a number")


def _output(text: str):
    """name:shape:dtype."""
    from .kernel import ARRAY_DTYPES, dtype_name

    parts = text.split(":")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"an output is NAME:SHAPE:DTYPE (e.g. out:4x16:float32), got {text!r}")
    name, shape, dtype = parts
    _identifier(name, "an output's name")
    try:
        dims = tuple(int(v) for v in shape.replace("x", ",").split(",") if v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"output {name}: shape {shape!r} is not integers like 4x16") from None
    if not dims or min(dims) < 0:
        raise argparse.ArgumentTypeError(f"output {name}: shape {shape!r} is not integers >= 0 like 4x16")
    try:
        dtype = dtype_name(dtype)
    except TypeError:
        dtype = None
    if dtype not in ARRAY_DTYPES:
        raise argparse.ArgumentTypeError(f"output {name}: dtype {parts[2]!r} is none of {', '.join(ARRAY_DTYPES)}")
    return name, dims, dtype


def _template(text: str):
    """name=value: an integer, true/false, or a dtype name."""
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"a template argument is NAME=VALUE, got {text!r}")
    _identifier(name, "a template argument's name")
    if value.lower() in ("true", "false"):
        return name, value.lower() == "true"
    try:
        return name, int(value)
    except ValueError:
        pass
    from .kernel import dtype_name

    try:
        return name, dtype_name(value)
    except TypeError:
        raise argparse.ArgumentTypeError(
            f"template {name}: {value!r} is not an integer, true/false or a dtype") from None


def add_parser(commands) -> argparse.ArgumentParser:
    """The check-kernel verb, added to the mlx-sgemm command's subparsers."""
    c = commands.add_parser(
        "check-kernel", help="run a Metal kernel (an mx.fast.metal_kernel body) on the CPU, checked",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("source", type=Path, metavar="KERNEL.metal", help="the kernel body (metal_kernel's source)")
    c.add_argument("--header", type=Path, default=None, help="a file for metal_kernel's header")
    c.add_argument("--name", default=None, help="the kernel's name (default: the file's stem)")
    c.add_argument("--grid", type=_triple, required=True, metavar="X,Y,Z", help="threads, as MLX's grid")
    c.add_argument("--threadgroup", type=_triple, required=True, metavar="X,Y,Z")
    c.add_argument("--inputs", nargs="*", type=_input, default=[], metavar="NAME=FILE.npy",
                   help="the inputs, in the kernel's order (NAME=NUMBER for a scalar)")
    c.add_argument("--outputs", nargs="+", type=_output, required=True, metavar="NAME:SHAPE:DTYPE")
    c.add_argument("--template", nargs="*", type=_template, default=[], metavar="NAME=VALUE",
                   help="template arguments: an integer, true/false, or a dtype (T=float32)")
    c.add_argument("--init-value", type=float, default=None, help="fill the outputs with this first")
    c.add_argument("--no-row-contiguous", action="store_true",
                   help="ensure_row_contiguous=False: inputs bound at their own strides")
    c.add_argument("--atomic-outputs", action="store_true", help="atomic_outputs=True")
    c.add_argument("--seed", type=int, default=0, help="the order threads and threadgroups run in")
    c.add_argument("--save-outputs", type=Path, default=None, metavar="DIR",
                   help="write each output to DIR/NAME.npy")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    return c


def _read(parser: argparse.ArgumentParser, path: Path | None, what: str) -> str:
    if path is None:
        return ""
    try:
        return path.read_text()
    except OSError as e:
        parser.error(f"{what} {path}: {e.strerror or e}")


def run_command(parser: argparse.ArgumentParser, args) -> int:
    """Run the check-kernel verb; the exit status."""
    import numpy as np

    from .compiler import HarnessError
    from .findings import CompileError, KernelError
    from .kernel import metal_kernel

    source = _read(parser, args.source, "KERNEL.metal")
    header = _read(parser, args.header, "--header")
    names = [n for n, _ in args.inputs] + [o[0] for o in args.outputs]
    if len(set(names)) != len(names):
        parser.error(f"argument --inputs/--outputs: names must differ, got {' '.join(names)}")
    inputs = []
    for name, value in args.inputs:
        if isinstance(value, Path):
            try:
                value = np.load(value, allow_pickle=False)
            except (OSError, ValueError) as e:
                parser.error(f"argument --inputs: {name}: cannot read {value}: {e}")
        inputs.append(value)
    if args.save_outputs is not None and args.save_outputs.exists() and not args.save_outputs.is_dir():
        parser.error(f"argument --save-outputs: {args.save_outputs} is not a folder")
    kernel = metal_kernel(
        name=args.name or _identifier_from(args.source.stem), input_names=[n for n, _ in args.inputs],
        output_names=[o[0] for o in args.outputs], source=source, header=header,
        ensure_row_contiguous=not args.no_row_contiguous, atomic_outputs=args.atomic_outputs,
        source_path=str(args.source), header_path=str(args.header) if args.header else None)
    try:
        outputs, report = kernel(
            inputs=inputs, output_shapes=[o[1] for o in args.outputs],
            output_dtypes=[o[2] for o in args.outputs], grid=args.grid, threadgroup=args.threadgroup,
            template=args.template, init_value=args.init_value, seed=args.seed)
    except CompileError as e:
        print(f"{args.source}: does not compile:\n{e.message}", file=sys.stderr)
        return NO_VERDICT
    except KernelError as e:  # something the checker does not model
        print(f"mlx-sgemm: {e}", file=sys.stderr)
        return NO_VERDICT
    except (TypeError, ValueError) as e:  # arguments MLX would refuse
        parser.error(str(e).replace("\n", " "))
    except HarnessError as e:  # no compiler, or the runtime could not run the job
        print(f"mlx-sgemm: {e}", file=sys.stderr)
        return NO_VERDICT
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(report)
    if outputs is not None and args.save_outputs is not None:
        args.save_outputs.mkdir(parents=True, exist_ok=True)
        for (name, _, _), out in zip(args.outputs, outputs):
            np.save(args.save_outputs / f"{name}.npy", out)
    return CLEAN if report.ok else FINDINGS


def _identifier_from(stem: str) -> str:
    """A kernel name from a file name: what is not a word character becomes _."""
    name = re.sub(r"\W", "_", stem)
    return name if _NAME.match(name) else f"k_{name}"
