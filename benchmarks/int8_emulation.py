"""What the INT8 emulation (chapter 7, ``mlx_sgemm.int8_emulated``) costs, phase
by phase, next to cuBLAS SGEMM and ``matmul`` in the same process.

    python benchmarks/int8_emulation.py [--sizes 4096 8192] [--csv out.csv]

For square products: ``mx.matmul`` in float32 (cuBLAS SGEMM, MLX_ENABLE_TF32=0),
``matmul`` (3xTF32), ``int8_emulated`` with 7, 8 and 9 moduli and with the
device choosing, timed in alternating rounds; then each phase alone on
evaluated inputs, with the device's choice (line statistics, the choice,
residues of A and of B, the products, the fallback's tiles, the CRT; and
``assess``, which reads the choice back) and the INT8 products' rate (2 s M N
K / time, padded tiles).
The mma.sync residue GEMM (int32 out) at s = 8 for comparison. Error is
normwise against float64 on sampled rows. ``--accuracy``: instead, the
accuracy table (normal inputs, GEMMul8's hard inputs, 1e30 next to 1e-30; K =
31, 4096, 65536) against cuBLAS SGEMM's. Needs a Hopper GPU.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402

import mlx_sgemm  # noqa: E402
from mlx_sgemm.bench import accuracy, results, timing  # noqa: E402
from mlx_sgemm.bench.measure import sampled_error  # noqa: E402
from mlx_sgemm.build import specs  # noqa: E402
from mlx_sgemm.dispatch import device  # noqa: E402
from mlx_sgemm.emulation import gpu, op, residue_gemm  # noqa: E402


def accuracy_table(path: str | None) -> None:
    """int8_emulated's errors (normwise, worst componentwise) next to cuBLAS
    SGEMM's on the same inputs, 512 x 512 products, and what the op chose."""
    rng = np.random.default_rng(0)
    rows = []
    for k in (31, 4096, 65536):
        for kind in ("normal", "phi0.5", "phi1", "phi2", "phi4", "1e30 next to 1e-30"):
            a, b = accuracy.emulation_inputs(kind, 512, 512, k, rng)
            x, y = mx.array(a), mx.array(b)
            verdict = op.assess(x, y)[0]
            row = dict(device=device.name(), K=k, inputs=kind, moduli=verdict.moduli or "",
                       bits=verdict.bits, computed_by="int8_emulated" if verdict.reason is None
                       else op.fallback(verdict).__name__,
                       **accuracy.errors_beside_cublas(mlx_sgemm.int8_emulated(x, y), a, b))
            results.write_table([row], None)
            rows.append(row)
    results.write_table(rows, path, echo=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--accuracy-csv", default=None, help="the accuracy table's CSV (run with --accuracy)")
    parser.add_argument("--accuracy", action="store_true", help="the accuracy table instead of the timings")
    args = parser.parse_args()
    if args.accuracy:
        accuracy_table(args.accuracy_csv)
        return
    rows = []

    def record(size, kernel, seconds, error="", s="", note="", flops=None):
        flops = flops if flops is not None else 2.0 * size**3
        row = dict(device=device.name(), kernel=kernel, precision="float32", M=size, N=size, K=size,
                   moduli=s, us=round(seconds * 1e6, 1), gflops=round(flops / seconds / 1e9, 1),
                   x_cublas_sgemm="", error=error, note=note)
        rows.append(row)
        return row

    for size in args.sizes:
        a, b = accuracy.random_operands((size, size), (size, size))
        mx.eval(a, b)
        fns = {"mx.matmul": lambda: mx.matmul(a, b), "matmul": lambda: mlx_sgemm.matmul(a, b)}
        for s in (7, 8, 9):
            fns[f"int8_emulated moduli={s}"] = lambda s=s: mlx_sgemm.int8_emulated(a, b, moduli=s)
        fns["int8_emulated (device's choice)"] = lambda: mlx_sgemm.int8_emulated(a, b)
        medians = timing.alternating_medians(fns, rounds=3, repeats=args.repeats)
        chosen = op.assess(a, b)[0]
        first = len(rows)
        for name, seconds in medians.items():
            s = name.split("=")[-1] if "moduli=" in name else (chosen.moduli if "choice" in name else "")
            record(size, name, seconds, f"{sampled_error(fns[name](), a, b):.2e}", s)
        for row in rows[first:]:
            row["x_cublas_sgemm"] = round(medians["mx.matmul"] / (row["us"] / 1e6), 3)

        # Phases, each on evaluated inputs, with the device's choice (room for
        # gpu.MAX_MODULI moduli, the blocks past the choice stopping at once).
        s, s_max = chosen.moduli or 8, gpu.MAX_MODULI
        x = gpu.Operands(a, b)
        mx.eval(x.a_stats, x.b_stats, x.choice)
        ra = gpu.residues(x.a, x.a_stats, x.choice, s_max, specs.RESIDUE_TILE_M)
        rb = gpu.residues(x.bt, x.b_stats, x.choice, s_max, specs.RESIDUE_TILE_N)
        q = gpu.products(ra, rb, x.choice, size, size, size, s_max, gpu.least_moduli(size))
        direct = gpu.fallback_product(x.a, x.b, x.choice, x.a_stats, x.b_stats)
        mx.eval(ra, rb, q, direct)
        phases = {
            "phase: line statistics (A and B^T)": lambda: mx.concatenate(gpu.line_stats(a, x.bt), 1),
            "phase: choice (on the device)": lambda: gpu.choose(x.a_stats, x.b_stats, size, size, size),
            "phase: residues of A": lambda: gpu.residues(x.a, x.a_stats, x.choice, s_max, specs.RESIDUE_TILE_M),
            "phase: residues of B (read as B^T)": lambda: gpu.residues(x.bt, x.b_stats, x.choice, s_max,
                                                                       specs.RESIDUE_TILE_N),
            "phase: products (wgmma, mod p)": lambda: gpu.products(ra, rb, x.choice, size, size, size, s_max,
                                                                   gpu.least_moduli(size)),
            "phase: fallback tiles (none here)": lambda: gpu.fallback_product(x.a, x.b, x.choice, x.a_stats,
                                                                              x.b_stats),
            "phase: reconstruct (CRT)": lambda: gpu.reconstruct(q, x.a_stats, x.b_stats, x.choice, direct, size),
            "all phases, without the op's Python (gpu.emulated)": lambda: gpu.emulated(a, b),
            "assess (the choice read back: a synchronization)": lambda: mx.array(op.assess(a, b)[0].moduli),
        }
        if size <= 4096:
            r8 = mx.random.randint(-128, 128, (s, size, size)).astype(mx.int8)
            mx.eval(r8)
            phases["mma.sync residue GEMM (int32 out)"] = lambda: residue_gemm.residue_products(r8, r8)
        for name, seconds in timing.alternating_medians(phases, rounds=3, repeats=args.repeats).items():
            flops = None
            note = ""
            if "products" in name or "mma.sync" in name:
                flops = gpu.int8_ops(size, size, size, s)
                note = "gflops: INT8 GOPS of the products"
            record(size, name, seconds, s=s, note=note, flops=flops)
        results.write_table(rows[first:], None)
    results.write_table(rows, args.csv, echo=False)


if __name__ == "__main__":
    main()
