"""small_m variants against each other and mx.matmul (float32), each call a
compiled launch, in 3 alternating rounds (each side's median round).

    python benchmarks/small_m_variants.py                  # small_m's variants
    python benchmarks/small_m_variants.py --wide small_m small_m_wide small_m_wide:U=2
                                                     # M 1-4 against wide B
    python benchmarks/small_m_variants.py --one-at-a-time --cases 1,4096,4096,T -- small_m
                                                     # chosen shapes, each call chained

A variant is written as for benchmarks/kernel_variants.py ("small_m:STAGES=3",
"small_m_wide:WARPS=16,U=1"). The question: which small-M template is fastest
for decode-time products? CUDA only; prints a table. Results so far:
docs/performance-log.md, "small_m: B and A through a ring of cp.async windows"
and "small_m_wide: B straight into registers".
"""

import argparse
import os
import sys

import mlx.core as mx  # noqa: E402
from kernel_variants import parse_variant  # noqa: E402

from mlx_sgemm.bench import accuracy, measure, timing
from mlx_sgemm.build import launcher
from mlx_sgemm.dispatch import device

os.environ["MLX_ENABLE_TF32"] = "0"  # cuBLAS SGEMM for mx.matmul (read once, at import)
sys.path.insert(0, os.path.dirname(__file__))

VARIANTS = ["small_m", "small_m:STAGES=3", "small_m:BN=16,WARPS=4", "small_m:BN=64,WARPS=16"]
# (M, N, K, B is a transposed view)
CASES = [(1, 4096, 4096, False), (1, 4096, 4096, True), (1, 14336, 4096, False), (1, 14336, 4096, True),
         (4, 14336, 4096, False), (8, 4096, 14336, False), (8, 4096, 14336, True), (1, 1024, 4096, False)]
# --wide: 1-4 rows (small_m_wide's) against B of 8192-14336 columns, both
# layouts, and two shapes at N = 4096. (Timed this way, as independent calls,
# these set small_m_wide's threshold at 4096; one product at a time moved it to
# 12288: kernel_choice.WIDE_N, docs/performance-log.md, "One product at a
# time: what the suite's loop had hidden".)
WIDE_CASES = [(m, n, k, t) for t in (False, True) for m in (1, 2, 3, 4)
              for n, k in ((14336, 4096), (11008, 4096), (8192, 8192))]
WIDE_CASES += [(1, 4096, 4096, t) for t in (False, True)] + [(4, 4096, 14336, t) for t in (False, True)]


def parse_case(text: str) -> tuple[int, int, int, bool]:
    """M,N,K or M,N,K,T (T: B is a transposed view)."""
    parts = text.split(",")
    return int(parts[0]), int(parts[1]), int(parts[2]), parts[3:] == ["T"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="*", default=VARIANTS)
    parser.add_argument("--wide", action="store_true", help="the 1-4-row cases against wide B")
    parser.add_argument("--cases", nargs="+", type=parse_case, help="M,N,K[,T] instead")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="each call waits for the previous one (timing.one_at_a_time)")
    args = parser.parse_args()
    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend")
        return 1
    cases = args.cases or (WIDE_CASES if args.wide else CASES)
    calls = {v: (lambda spec: mx.compile(lambda x, y: launcher.launch(spec, x, y)))(parse_variant(v)[1])
             for v in args.variants}
    calls["mx.matmul"] = mx.matmul
    for m, n, k, transposed in cases:
        a, w = accuracy.random_operands((m, k), (n, k) if transposed else (k, n))
        mx.eval(a, w)
        b = mx.swapaxes(w, -1, -2) if transposed else w
        timed = {name: timing.one_at_a_time(call, a, b) if args.one_at_a_time
                 else (lambda call=call: call(a, b)) for name, call in calls.items()}
        medians = timing.alternating_medians(timed)
        for v in args.variants:
            err = measure.sampled_error(calls[v](a, b), a, b)
            if not err < 1e-6:
                print(f"{v}: error {err:.2e} at {m}x{n}x{k}")
                return 1
        label = f"{m}x{n}x{k}{' W.T' if transposed else ''}"
        print(f"{label}: " + " | ".join(f"{name} {t * 1e6:.1f} us" for name, t in medians.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
