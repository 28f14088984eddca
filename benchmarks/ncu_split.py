"""The float16 split's kernels under Nsight Compute, one product at each size:
how far each phase (statistics, split, fallback) is from the memory's
bandwidth, and how much of the SM's shared memory the products kernel leaves,
beside cuBLAS's own float16 GEMM of the same shape.

    python benchmarks/ncu_split.py --csv benchmarks/results/ncu-split-DATE-DEVICE.csv

The question (docs/performance-log.md, "The split's phases under Nsight
Compute"): could the split's phases go inside the products kernel, its
producer converting float32 tiles on load, without slowing the products? A
converted tile costs shared memory a write, a read and a write again before the
products read it. CUDA on Hopper only, on the GPU machine (ncu on PATH); each
kernel replayed with the L2 flushed before it (the phases' DRAM-bound case).
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess

from mlx_sgemm.bench import nsight, results

# (precision, n) of the n^3 products timed, each twice (the second recorded),
# and for float32 cuBLAS's float16 GEMM of the shape after them, twice.
CONFIGS = (("float32", 2048), ("float32", 4096), ("float32", 8192), ("tf32", 4096), ("tf32", 8192))
CALLS = 2
# What each kernel is asked: its time, the SM clock, DRAM and L2 traffic, and
# shared memory's data banks (reads, writes) and its pipe of wavefronts (which
# wgmma's operand reads keep busy too), in % of their peaks over the kernel's
# time.
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "dram__bytes_read.sum",
           "dram__bytes_write.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_bytes.sum",
           "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed",
           "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed")
OURS = ("line_stats", "half_split", "fallback", "fp16_emulated")  # the split's kernels, by name
PRODUCTS = "fp16_emulated"  # the products kernel, last of a product's kernels


def child() -> int:
    """Under ncu: each config's products in turn (operands made first)."""
    os.environ["MLX_ENABLE_TF32"] = "0"
    import mlx.core as mx

    from mlx_sgemm import ops
    from mlx_sgemm.bench import accuracy
    for precision, n in CONFIGS:
        a, b = accuracy.random_operands((n, n), (n, n))
        mx.eval(a, b)
        for _ in range(CALLS):
            mx.eval(ops.matmul(a, b, precision=precision))
        if precision == "float32":
            ah, bh = a.astype(mx.float16), b.astype(mx.float16)
            mx.eval(ah, bh)
            for _ in range(CALLS):
                mx.eval(mx.matmul(ah, bh))
        mx.synchronize()
    return 0


def profile() -> str:
    """ncu's raw CSV page for every kernel of ours and cuBLAS's the child launches."""
    cmd = nsight.command("|".join(OURS) + "|sm90|xmma|cutlass|gemm", METRICS, [__file__, "--child"])
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def calls_of(rows: list[dict]) -> list[list[dict]]:
    """The kernels in launch order, grouped by call: ours end at the
    products kernel; any other (cuBLAS's) is a call of one kernel."""
    calls, current = [], []
    for row in rows:
        name = row["Kernel Name"]
        if any(part in name for part in OURS):
            current.append(row)
            if PRODUCTS in name:
                calls.append(current)
                current = []
        else:
            calls.append([row])
    return calls


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", help="where to write the table (required but with --child)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child()
    if not args.csv:
        parser.error("--csv is required")
    import mlx.core as mx

    from mlx_sgemm.dispatch import device
    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend and Nsight Compute")
        return 1
    calls = calls_of(nsight.rows(profile()))
    # Each config: CALLS of ours, then (float32) CALLS of cuBLAS's float16 GEMM.
    expected = [(p, n, who) for p, n in CONFIGS for who in ("ours",) + (("cublas_fp16",) if p == "float32" else ())
                for _ in range(CALLS)]
    assert len(calls) == len(expected), (len(calls), len(expected))
    base = dict(device=device.name(), mlx_version=mx.__version__, date=datetime.date.today().isoformat())
    table = []
    for i, ((precision, n, who), call) in enumerate(zip(expected, calls)):
        if (i + 1) % CALLS:  # the last call of each
            continue
        for row in call:
            name = row["Kernel Name"]
            kind = next((part for part in OURS if part in name), "cublas_fp16_gemm")
            us = nsight.number(row, METRICS[0])
            dram = nsight.number(row, "dram__bytes_read.sum") + nsight.number(row, "dram__bytes_write.sum")
            table.append(dict(base, precision=precision, n=n, op=who, kernel=kind, us=round(us, 1),
                              sm_ghz=round(nsight.number(row, METRICS[1]), 3),
                              dram_mb=round(dram, 1), dram_tb_s=round(dram / us, 2),
                              dram_pct=round(nsight.number(row, METRICS[4]), 1),
                              l2_mb=round(nsight.number(row, "lts__t_bytes.sum"), 1),
                              smem_reads_pct=round(nsight.number(row, METRICS[6]), 1),
                              smem_writes_pct=round(nsight.number(row, METRICS[7]), 1),
                              smem_lsu_pct=round(nsight.number(row, METRICS[8]), 1)))
    results.write_table(table, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
