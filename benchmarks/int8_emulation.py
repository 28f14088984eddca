"""What the INT8 emulation (chapter 6, ``mlx_sgemm.int8_emulated``) costs, phase
by phase, next to cuBLAS SGEMM and ``matmul`` in the same process.

    python benchmarks/int8_emulation.py [--sizes 4096 8192] [--csv out.csv]

For square products: ``mx.matmul`` in float32 (cuBLAS SGEMM, MLX_ENABLE_TF32=0),
``matmul`` (3xTF32), ``int8_emulated`` with 7, 8 and 9 moduli and with the
pre-pass choosing, timed in alternating rounds; then each phase alone on
evaluated inputs (residues of A and B, the products, the CRT) and the INT8
products' rate (2 s M N K / time, padded tiles) against the INT8 ceilings.
The old mma.sync residue GEMM (int32 out) at s = 8 for comparison. Error is
normwise against float64 on sampled rows. Needs a Hopper GPU.
"""

from __future__ import annotations

import argparse
import csv
import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx  # noqa: E402

import mlx_sgemm  # noqa: E402
from mlx_sgemm.bench import accuracy, timing  # noqa: E402
from mlx_sgemm.bench.measure import sampled_error  # noqa: E402
from mlx_sgemm.build import specs  # noqa: E402
from mlx_sgemm.dispatch import device  # noqa: E402
from mlx_sgemm.emulation import gpu, moduli, op, residue_gemm  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    rows = []

    def record(size, kernel, seconds, error="", s="", note="", flops=None):
        flops = flops if flops is not None else 2.0 * size**3
        row = dict(device=device.name(), M=size, N=size, K=size, kernel=kernel, moduli=s,
                   us=round(seconds * 1e6, 1), tflops=round(flops / seconds / 1e12, 1),
                   x_cublas_sgemm="", error=error, note=note)
        rows.append(row)
        return row

    for size in args.sizes:
        a, b = accuracy.random_operands((size, size), (size, size))
        mx.eval(a, b)
        fns = {"mx.matmul": lambda: mx.matmul(a, b), "matmul": lambda: mlx_sgemm.matmul(a, b)}
        for s in (7, 8, 9):
            fns[f"int8_emulated moduli={s}"] = lambda s=s: mlx_sgemm.int8_emulated(a, b, moduli=s)
        fns["int8_emulated (pre-pass)"] = lambda: mlx_sgemm.int8_emulated(a, b)
        medians = timing.alternating_medians(fns, rounds=3, repeats=args.repeats)
        chosen = op.assess(a, b)[0]
        first = len(rows)
        for name, seconds in medians.items():
            s = name.split("=")[-1] if "moduli=" in name else (chosen.moduli if "pre-pass" in name else "")
            record(size, name, seconds, f"{sampled_error(fns[name](), a, b):.2e}", s)
        for row in rows[first:]:
            row["x_cublas_sgemm"] = round(medians["mx.matmul"] / (row["us"] / 1e6), 3)

        # Phases, each on evaluated inputs, s = 8.
        s, bits = 8, moduli.bits_for(size, 8)
        bt = mx.contiguous(b.T)
        mx.eval(bt)
        a_shift = gpu.line_shifts(gpu.line_stats(a)[0], bits)
        b_shift = gpu.line_shifts(gpu.line_stats(bt)[0], bits)
        mx.eval(a_shift, b_shift)
        ra = gpu.residues(a, a_shift, s, bits, specs.RESIDUE_TILE_M)
        rb = gpu.residues(bt, b_shift, s, bits, specs.RESIDUE_TILE_N)
        mx.eval(ra, rb)
        q = gpu.products(ra, rb, size, size, size, s)
        mx.eval(q)
        phases = {
            "phase: B^T copy": lambda: mx.contiguous(b.T) + 0,
            "phase: line statistics (A and B^T)": lambda: mx.concatenate([gpu.line_stats(a), gpu.line_stats(bt)], 1),
            "phase: pre-pass (statistics, read back, choice)": lambda: mx.array(op.assess(a, b)[0].moduli),
            "phase: residues (A and B^T)": lambda: mx.concatenate([
                gpu.residues(a, a_shift, s, bits, specs.RESIDUE_TILE_M),
                gpu.residues(bt, b_shift, s, bits, specs.RESIDUE_TILE_N)]),
            "phase: products (wgmma, mod p)": lambda: gpu.products(ra, rb, size, size, size, s),
            "phase: reconstruct (CRT)": lambda: gpu.reconstruct(q, a_shift, b_shift, a, bt, size, s),
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
                note = "tflops = INT8 TOPS of the products"
            record(size, name, seconds, s=s, note=note, flops=flops)
        for row in rows[first:]:
            print(" | ".join(str(v) for v in row.values()), flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
