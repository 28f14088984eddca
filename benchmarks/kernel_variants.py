"""Time kernel variants side by side with mx.matmul, for performance work.

A variant is a stage with some of its spec changed, e.g.

    python benchmarks/kernel_variants.py --sizes 4096 8192 \\
        tile_threads tile_threads:min_blocks=2 tile_simdgroup:BK=16

(`key=value` changes a template constant of that name, or else a KernelSpec
field). Each variant is checked against float64 on sampled rows and timed (median
after warm-up) in the same process as mx.matmul. Results are printed and, with
--csv, appended to a file. Needs an MLX GPU backend (the variant's).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import os
import sys

import mlx.core as mx

from mlx_sgemm.bench import accuracy, measure, timing
from mlx_sgemm.build import launcher, specs
from mlx_sgemm.dispatch import device


def parse_variant(text: str) -> tuple[str, specs.KernelSpec]:
    stage, _, changes = text.partition(":")
    defines = tuple(
        (c[2:].partition("=")[0], int(c.partition("=")[2]))
        for c in changes.split(",") if c.startswith("D_")
    )  # D_NAME=1: a macro ahead of the header, for experiments
    changes = ",".join(c for c in changes.split(",") if not c.startswith("D_"))
    builders = {
        "tile_simdgroup": specs.cuda_warp_tiled,
        "tile_async": specs.cuda_pipelined,
        "tile_wgmma": specs.cuda_wgmma,
        "small_m": lambda _stage, **kwargs: specs.cuda_small_m(**kwargs),
        "small_m_wide": lambda _stage, **kwargs: specs.cuda_small_m_wide(**kwargs),
    }
    if stage in builders and device.backend() == device.CUDA:
        # Its shared memory or threadgroup follows from the template: rebuild it from the builder.
        kwargs = {}
        for change in filter(None, changes.split(",")):
            key, _, value = change.partition("=")
            kwargs[key] = int(value)
        spec = builders[stage](stage, **kwargs)
        return text, dataclasses.replace(spec, defines=spec.defines + defines)
    spec = dataclasses.replace(specs.spec(stage, device.backend()), defines=defines)
    template = dict(spec.template)
    fields = {}
    for change in filter(None, changes.split(",")):
        key, _, value = change.partition("=")
        value = int(value)
        if key in template:
            template[key] = type(template[key])(value)
        else:
            fields[key] = value
    spec = dataclasses.replace(spec, template=tuple(template.items()), **fields)
    return text, spec


def baseline_label() -> str:
    """mx.matmul on CUDA uses TF32 unless MLX_ENABLE_TF32=0 (read once per process)."""
    tf32 = os.environ.get("MLX_ENABLE_TF32", "1") not in ("0", "false", "False")
    return "mx.matmul (TF32)" if tf32 and device.backend() == device.CUDA else "mx.matmul (FP32)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+")
    parser.add_argument("--sizes", nargs="+", type=int, default=[4096])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--transpose-b", action="store_true",
                        help="pass B as a transposed view (x @ W.T), read in place")
    args = parser.parse_args(argv)
    if device.backend() == device.CPU_FALLBACK:
        print("no GPU backend: nothing to time")
        return 1
    variants = [parse_variant(v) for v in args.variants]
    name = device.name()
    rows = []
    for size in args.sizes:
        a, b = accuracy.random_operands((size, size), (size, size))
        if args.transpose_b:
            b = mx.contiguous(b.T).T  # same values, column-major
        mx.eval(a, b)
        base_s = timing.median_seconds(lambda: mx.matmul(a, b), repeats=args.repeats)
        base_err = measure.sampled_error(mx.matmul(a, b), a, b)
        print(f"\n{name} {size}^3: {baseline_label()} {timing.gflops(size, size, size, base_s) / 1e3:.1f} TFLOP/s err {base_err:.2e}")
        for label, spec in variants:
            fn = lambda: launcher.launch(spec, a, b)  # noqa: E731
            s = timing.median_seconds(fn, repeats=args.repeats)
            err = measure.sampled_error(fn(), a, b)
            tflops = timing.gflops(size, size, size, s) / 1e3
            print(f"  {label:45s} {tflops:7.2f} TFLOP/s  x{base_s / s:5.2f}  err {err:.2e}  ({err / base_err:.1f}x)")
            rows.append(dict(device=name, date=datetime.date.today().isoformat(), size=size,
                             variant=label, seconds=s, tflops=tflops, x_matmul=base_s / s,
                             error=err, baseline=baseline_label(), baseline_error=base_err))
    if args.csv:
        with open(args.csv, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            if f.tell() == 0:
                writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
