"""half_gemv's kernel alone against MLX's own GEMV, under Nsight Compute:
kernel time and DRAM throughput per call, L2 flushed before each.

    python benchmarks/ncu_half_gemv.py --csv benchmarks/results/half-gemv-kernel-DATE-DEVICE.csv \\
        [--dtype bfloat16] [--variants WARPS=8,MIN_BLOCKS=2 ...] [--shapes 1x14336x4096T ...]

For each shape (M N K, B as a transposed view `x @ W.T` or row-major), runs
benchmarks/ncu_small_m.py under ncu: five calls of mx.matmul, five of matmul
(half_gemv as matmul chooses it), for one row against W.T five of a model
layer's (half_gemv_one_row), and five of each variant (cuda_half_gemv's
keywords, NAME=VALUE,...) launched directly, and records the median of each
five, a row per kernel with its template: what chapter 8's kernel table
(mlx_sgemm/pages/half_precision.py) reads, matmul's choice first. CUDA only,
on the GPU machine (ncu on PATH).
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import subprocess

import mlx.core as mx

from mlx_sgemm.bench import nsight, results
from mlx_sgemm.build import specs
from mlx_sgemm.dispatch import device, kernel_choice
from mlx_sgemm.dispatch.problem import plan
from mlx_sgemm.pages.half_precision import TEMPLATE, gemv_template  # the CSV's columns of the variant

# (M, N, K, x @ W.T): a token of a 7B/8B model's projections, and the widest.
SHAPES = ((1, 14336, 4096, True), (1, 4096, 4096, True), (1, 4096, 14336, True), (8, 4096, 14336, True),
          (1, 11008, 4096, True), (1, 4096, 11008, True), (1, 14336, 4096, False), (1, 4096, 4096, False))
VARIANTS = ("WARPS=16,MIN_BLOCKS=1", "WARPS=8,MIN_BLOCKS=2", "WARPS=16,IN_FLIGHT=1,MIN_BLOCKS=1",
            "NT=1,WARPS=4,IN_FLIGHT=1,MIN_BLOCKS=8")
METRICS = ("gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed")
CALLS = 5


def profile(m: int, n: int, k: int, transposed: bool, dtype: str, variants: list[str]) -> list[tuple[float, float]]:
    """(us, DRAM %) of every GEMV kernel launched, in order."""
    program = (["benchmarks/ncu_small_m.py", str(m), str(n), str(k)] + (["T"] if transposed else []) + [dtype]
               + [f"half_gemv:{v}" for v in variants])
    cmd = nsight.command("gemv", METRICS, program)
    return parse(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def parse(ncu_output: str) -> list[tuple[float, float]]:
    """(us, DRAM %) of each kernel in ncu's raw CSV page."""
    return [(nsight.number(r, METRICS[0]), nsight.number(r, METRICS[1])) for r in nsight.rows(ncu_output)]


def keywords(variant: str) -> dict[str, int]:
    """cuda_half_gemv's keywords from NAME=VALUE,..."""
    return {key: int(value) for key, _, value in (c.partition("=") for c in variant.split(","))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True)
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--shapes", nargs="*", help="MxNxK, with a T for x @ W.T (default: the token shapes)")
    args = parser.parse_args(argv)
    shapes = SHAPES if not args.shapes else [
        (*map(int, text.rstrip("T").split("x")), text.endswith("T")) for text in args.shapes]
    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend and Nsight Compute")
        return 1
    base = dict(device=device.name(), mlx_version=mx.__version__, date=datetime.date.today().isoformat(),
                dtype=args.dtype)
    rows = []
    for m, n, k, transposed in shapes:
        launches = profile(m, n, k, transposed, args.dtype, args.variants)
        # The launches in order: MLX's GEMV (x @ W.T of one row: otherwise
        # cuBLAS, which the filter leaves out), matmul's, each variant's.
        chosen = kernel_choice.half_gemv(plan((m, k), (k, n)), args.dtype, args.dtype)
        kernels = [("half_gemv", gemv_template(chosen))]
        if m == 1 and transposed:  # then a layer's call (ncu_small_m.py): its token alone
            layer = kernel_choice.half_gemv_one_row(args.dtype, args.dtype)
            kernels.append(("half_gemv_one_row", gemv_template(layer)))
        kernels += [("half_gemv", gemv_template(specs.cuda_half_gemv(args.dtype, **keywords(v))))
                    for v in args.variants]
        if len(launches) == CALLS * (len(kernels) + 1):
            kernels.insert(0, ("mx.matmul (gemv)", {}))
        assert len(launches) == CALLS * len(kernels), (len(launches), kernels)
        for i, (name, t) in enumerate(kernels):
            calls = launches[CALLS * i:CALLS * (i + 1)]
            rows.append(dict(base, layout="transposed" if transposed else "row-major", M=m, N=n, K=k,
                             kernel=name, **{key: t.get(key, "") for key in TEMPLATE},
                             median_us=round(statistics.median(c[0] for c in calls), 2),
                             dram_pct=round(statistics.median(c[1] for c in calls), 2), calls=CALLS))
            r = rows[-1]
            variant = ",".join(f"{key}={r[key]}" for key in TEMPLATE if r[key] != "")
            print(f"{m}x{n}x{k} {r['layout']:10s} {name} {variant:40s} {r['median_us']:7.2f} us "
                  f"{r['dram_pct']:5.1f}%", flush=True)
    results.write_table(rows, args.csv, echo=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
