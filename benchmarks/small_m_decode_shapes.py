"""Time the small-M kernel (kernels/cuda/small_m.cu) on decode-time shapes, next to
mx.matmul, with B row-major (x @ W) or a transposed view (x @ W.T).

    python benchmarks/small_m_decode_shapes.py --M 1 4 8 -- \\
        "" "STAGES=3" "WARPS=16,STAGES=3" "BN=16,WARPS=4"

A variant is `key=value` changes to the small_m spec: an argument of
specs.cuda_small_m (BN, WARPS, STAGES: shared memory, block_n, the threadgroup
and min_blocks follow), a KernelSpec field (min_blocks), or D_NAME=1 (a macro
ahead of the header). --S adds split-K outside the kernel: A viewed as
(S, M, K/S) (mx.as_strided) and B as (S, K/S, N), then mx.sum over S (views, no
copies). Every result is checked against float64 (error as in
mlx_sgemm.bench.accuracy). Also prints the device's read / copy bandwidth and the
per-call floor of the timing (a tiny product). Rows go to --csv as they come.

The times are per call, the Python and MLX work of a call included; each call
is compiled (mx.compile), as matmul's are (on an H200 about 8 us a call for
small_m, 15 for mx.matmul). The kernels' own times: --profile
under Nsight Compute,

    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        python benchmarks/small_m_decode_shapes.py --profile --M 1 8 -- "" > ncu.csv
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import inspect
import os
import sys
import time

import mlx.core as mx
import numpy as np

from mlx_sgemm.bench import accuracy, timing
from mlx_sgemm.build import launcher, registry, specs
from mlx_sgemm.dispatch import device
from mlx_sgemm.dispatch.problem import plan

SHAPES = ("4096x4096", "1024x4096", "14336x4096", "4096x14336")  # N x K


def variant_spec(text: str) -> specs.KernelSpec:
    builder, fields, defines = {}, {}, []
    arguments = inspect.signature(specs.cuda_small_m).parameters
    for change in filter(None, text.split(",")):
        key, _, value = change.partition("=")
        if key.startswith("D_"):
            defines.append((key[2:], int(value)))
        elif key in arguments:
            builder[key] = int(value)
        else:
            fields[key] = int(value)
    return dataclasses.replace(specs.cuda_small_m(**builder), defines=tuple(defines), **fields)


def split_k(a, b, w, s):
    """(S, M, K/S) and (S, K/S, N) views of a (M, K) and of b (K, N), or of w.T when
    w (N, K) is given (b then a transposed view)."""
    m, k = a.shape
    a_s = mx.as_strided(a, (s, m, k // s), (k // s, k, 1))
    if w is None:
        return a_s, b.reshape(s, k // s, b.shape[1])
    n = w.shape[0]
    return a_s, mx.swapaxes(mx.as_strided(w, (s, n, k // s), (k // s, k, 1)), 1, 2)


def product(spec, a, b, w, s):
    """One call of ``spec``, compiled as matmul's calls are (ops._compiled)."""
    if s == 1:
        launch = mx.compile(lambda x, y: launcher.launch(spec, x, y))
        bb = w.T if w is not None else b
        return lambda: launch(a, bb)
    a_s, b_s = split_k(a, b, w, s)
    launch = mx.compile(lambda x, y: mx.sum(launcher.launch(spec, x, y), axis=0))
    return lambda: launch(a_s, b_s)


def lean(spec, a, b):
    """The kernel called directly, its params array made once: launcher.launch without
    the Python planning, to tell the per-call overhead from the kernel's time."""
    p = plan(a.shape, b.shape)
    params = mx.array(p.params(spec.block_m, spec.block_n), dtype=mx.int32)
    mx.eval(params)
    kernel = registry.kernel(spec)
    grid = p.grid(spec.block_m, spec.block_n, spec.threadgroup)
    shape = [p.kernel_out_shape()]
    template = launcher.template_arguments(spec)
    return lambda: kernel(inputs=[a, b, params], output_shapes=shape, output_dtypes=[mx.float32],
                          grid=grid, threadgroup=spec.threadgroup, template=template)[0]


def bandwidth(repeats):
    x = mx.random.normal((96 * 2**20,))  # 384 MB: far beyond L2
    mx.eval(x)
    read = timing.median_seconds(lambda: mx.sum(x), repeats=repeats)
    copy = timing.median_seconds(lambda: x + 1.0, repeats=repeats)
    nbytes = x.size * 4
    print(f"bandwidth: read (mx.sum) {nbytes / read / 1e12:.2f} TB/s, "
          f"copy (x + 1) {2 * nbytes / copy / 1e12:.2f} TB/s")


def profile(args) -> int:
    """Every product once, mx.matmul first, after all operands exist: under
    `ncu --clock-control none --metrics gpu__time_duration.sum` the kernels'
    own times (L2 flushed before each), in the order printed here."""
    variants = [(v or "default", variant_spec(v)) for v in args.variants]
    cases = []
    for shape in args.shapes:
        n, k = map(int, shape.split("x"))
        _, b = accuracy.random_operands((1, 1), (k, n))
        w = mx.contiguous(b.T)
        for m in args.M:
            a, _ = accuracy.random_operands((m, k), (1, 1))
            cases += [(m, n, k, layout, a, w.T if layout == "col" else b) for layout in args.layouts]
    mx.eval([case[4:] for case in cases])
    for label, spec in variants:  # compiled (NVRTC) before the profiled launches
        mx.eval(launcher.launch(spec, *cases[0][4:]))
    print("profiled launches:", ", ".join(["mx.matmul"] + [label for label, _ in variants]), "per case")
    for m, n, k, layout, a, b in cases:
        print(f"case {m} {n} {k} {layout}")
        mx.eval(mx.matmul(a, b))
        for _, spec in variants:
            mx.eval(launcher.launch(spec, a, b))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="*", default=[""])
    parser.add_argument("--M", nargs="+", type=int, default=[1, 4, 8])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), help="N x K")
    parser.add_argument("--S", nargs="+", type=int, default=[1])
    parser.add_argument("--layouts", nargs="+", default=["row", "col"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--budget", type=float, default=1e9, help="stop after this many seconds")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--lean", action="store_true", help="also time the first variant called directly")
    parser.add_argument("--profile", action="store_true",
                        help="no timing: each product once, for a profiler (see profile)")
    args = parser.parse_args(argv)
    if device.backend() != device.CUDA:
        print("small_m is a CUDA kernel: nothing to time here")
        return 1
    if args.profile:
        return profile(args)
    start = time.perf_counter()
    print(device.name(), "MLX_ENABLE_TF32 =", os.environ.get("MLX_ENABLE_TF32"))
    bandwidth(args.repeats)
    variants = [(v or "default", variant_spec(v)) for v in args.variants]
    t_a, t_b = accuracy.random_operands((1, 32), (32, 32))
    floor = timing.median_seconds(product(variants[0][1], t_a, t_b, None, 1), repeats=args.repeats)
    floor_mm = timing.median_seconds(lambda: mx.matmul(t_a, t_b), repeats=args.repeats)
    floor_lean = timing.median_seconds(lean(variants[0][1], t_a, t_b), repeats=args.repeats)
    print(f"per-call floor (1x32x32): small_m {floor * 1e6:.1f} us (lean {floor_lean * 1e6:.1f} us), "
          f"mx.matmul {floor_mm * 1e6:.1f} us")

    out = open(args.csv, "a", newline="") if args.csv else None
    writer = None
    print(f"{'M':>2} {'N':>6} {'K':>6} {'B':>3} {'S':>2} {'variant':34s} {'us':>8} {'mm us':>8} "
          f"{'x mm':>6} {'TB/s':>5} {'err':>8} {'mm err':>8}")
    for shape in args.shapes:
        n, k = map(int, shape.split("x"))
        _, b = accuracy.random_operands((1, 1), (k, n))
        w = mx.contiguous(b.T)  # (N, K): b's values, for x @ W.T
        mx.eval(b, w)
        b64 = np.asarray(b, dtype=np.float64)
        for m in args.M:
            a, _ = accuracy.random_operands((m, k), (1, 1))
            mx.eval(a)
            a64 = np.asarray(a, dtype=np.float64)
            ref = a64 @ b64
            scale = np.linalg.norm(np.abs(a64) @ np.abs(b64))

            def error(c):
                c = np.asarray(c, dtype=np.float64)
                return float("inf") if not np.all(np.isfinite(c)) else float(np.linalg.norm(c - ref) / scale)

            for layout in args.layouts:
                wl = w if layout == "col" else None
                bb = w.T if layout == "col" else b
                mm_s = timing.median_seconds(lambda: mx.matmul(a, bb), repeats=args.repeats)
                mm_err = error(mx.matmul(a, bb))
                runs = [(label, spec, s, product(spec, a, b, wl, s)) for label, spec in variants for s in args.S
                        if not (k % s or (k // s) % 4)]
                if args.lean:
                    runs.insert(1, ("lean " + variants[0][0], variants[0][1], 1, lean(variants[0][1], a, bb)))
                for label, spec, s, fn in runs:
                    if time.perf_counter() - start > args.budget:
                        print("budget spent: stopping")
                        return 0
                    try:
                        secs = timing.median_seconds(fn, repeats=args.repeats)
                        err = error(fn())
                    except Exception as e:  # noqa: BLE001 (report and go on)
                        print(f"{m} {n} {k} {layout} {s} {label}: FAILED {e}")
                        continue
                    row = dict(M=m, N=n, K=k, layout=layout, S=s, variant=label,
                               us=secs * 1e6, matmul_us=mm_s * 1e6, x_matmul=mm_s / secs,
                               tb_s=k * n * 4 / secs / 1e12, error=err, matmul_error=mm_err)
                    print(f"{m:2d} {n:6d} {k:6d} {layout:>3} {s:2d} {label:34s} {secs * 1e6:8.1f} "
                          f"{mm_s * 1e6:8.1f} {mm_s / secs:6.2f} {row['tb_s']:5.2f} {err:8.1e} {mm_err:8.1e}")
                    if out:
                        if writer is None:
                            writer = csv.DictWriter(out, fieldnames=list(row))
                            if out.tell() == 0:
                                writer.writeheader()
                        writer.writerow(row)
                        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
