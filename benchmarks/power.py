"""Power, SM clock and energy per product while one product runs back to back:
mx.matmul beside matmul (or kernel_variants.py variants), in the same process.

    python benchmarks/power.py --precision tf32 --sizes 4096 8192 \\
        [tile_wgmma:SPLIT=0,BM=256,LOOKAHEAD=1,IN_FLIGHT=1 ...]

Why: an H100 / H200 running a big product sits at its power limit (700 W on
the H200), where the clock it holds is set by the energy each instruction,
L2 request and tensor-core product costs. Two kernels that take the same
cycles can then differ in speed by their energy per product, which is stable
to ~1% from run to run where timings drift by several (docs/performance-log.md,
"TF32 at the power limit: energy per product"). nvidia-smi samples power and
clock every 50 ms; CUDA only. Prints a table; nothing is written.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def sample(fn, seconds: float):
    """Seconds a call, and the median power (W) and SM clock (MHz) meanwhile."""
    import mlx.core as mx

    for _ in range(3):
        mx.eval(fn())
    mx.synchronize()
    log = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=power.draw,clocks.sm", "--format=csv,noheader,nounits", "-lms", "50"],
        stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        mx.eval(*[fn() for _ in range(5)])
        calls += 5
    mx.synchronize()
    elapsed = time.perf_counter() - start
    log.terminate()
    rows = [[float(x) for x in line.split(",")] for line in log.communicate()[0].splitlines()
            if line.strip() and "N/A" not in line]
    rows = rows[len(rows) // 4:-2] or rows  # the steady part
    return elapsed / calls, statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", help="kernel_variants.py variants (default: matmul)")
    parser.add_argument("--precision", choices=("float32", "tf32"), default="tf32")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    # mx.matmul's precision is read once, at import.
    os.environ["MLX_ENABLE_TF32"] = "1" if args.precision == "tf32" else "0"
    import mlx.core as mx

    sys.path.insert(0, os.path.dirname(__file__))
    from kernel_variants import parse_variant

    from mlx_sgemm import ops
    from mlx_sgemm.bench import accuracy
    from mlx_sgemm.build import launcher
    from mlx_sgemm.dispatch import device

    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend and nvidia-smi")
        return 1
    for n in args.sizes:
        a, b = accuracy.random_operands((n, n), (n, n))
        mx.eval(a, b)
        fns = {"mx.matmul": lambda: mx.matmul(a, b)}
        if not args.variants:
            fns["matmul"] = lambda: ops.matmul(a, b, precision=args.precision)
        for v in args.variants:
            fns[v] = (lambda spec: lambda: launcher.launch(spec, a, b))(parse_variant(v)[1])
        for r in range(args.rounds):
            for name, fn in fns.items():
                seconds, watts, mhz = sample(fn, args.seconds)
                print(f"{n} round {r} {name:55s} {2 * n**3 / seconds / 1e12:6.1f} TFLOP/s "
                      f"{watts:4.0f} W {mhz:5.0f} MHz {watts * seconds * 1e3:7.1f} mJ/product", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
