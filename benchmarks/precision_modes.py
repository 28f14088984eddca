"""How accurate is each precision mode, on normal and on wide-range inputs?

    python benchmarks/precision_modes.py [--sizes 256 1024 4096 8192] [--out benchmarks/results]

For square sizes, the error against float64 (the benchmark's measure, 256
sampled rows) of mx.matmul and every op in float32 (cuBLAS SGEMM as the
baseline on CUDA), and of mx.matmul and matmul in TF32 (a child process with
MLX_ENABLE_TF32=1; CUDA only), on normal operands and on GEMMul8's wide-range
test matrices (mlx_sgemm.bench.precision_modes). Writes
precision-modes-<date>-<device>.csv, which the benchmark notebook's accuracy
section reads on machines without a GPU. Needs a CUDA or Metal GPU.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("MLX_ENABLE_TF32", "0")

from mlx_sgemm.bench import precision_modes, sweep
from mlx_sgemm.dispatch import device


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, default=list(sweep.DEFAULT_SIZES))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    try:
        rows = precision_modes.measure_modes(args.sizes)
    except RuntimeError as e:  # no GPU, or TF32 left on for mx.matmul
        print(f"{Path(__file__).name}: {e}", file=sys.stderr)
        return 2
    name = re.sub(r"[^a-z0-9]+", "-", device.name().lower().replace("nvidia ", "")).strip("-")
    path = precision_modes.write_csv(rows, args.out / f"precision-modes-{datetime.date.today().isoformat()}-{name}.csv")
    for row in rows:
        if row["M"] == max(args.sizes):
            print(f"{row['inputs']:>10}  {row['precision']:>7}  {row['kernel']:>14}  {row['error']:.2e}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
