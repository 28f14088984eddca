"""What do bfloat16 operands and ``deterministic=True`` cost, next to the
default float32 ``matmul`` and to ``mx.matmul``?

    python benchmarks/dtype_and_deterministic_cost.py [--csv out.csv]
        [--shapes 1x4096x4096 8x4096x4096 4096x4096x4096] [--repeats 20]

For a square product and three shapes of a 7B model's layers (``x @ W.T``: a
token, 8 tokens against the MLP's up projection, a 2048-token prefill), or the
``--shapes`` given (MxNxK, with ``:WT`` for ``x @ W.T``), times in alternating
rounds in one process: ``mx.matmul`` in float32 (cuBLAS SGEMM), ``matmul``,
``matmul(deterministic=True)``, and with bfloat16 operands ``mx.matmul``
(cuBLAS's bf16 GEMM), ``matmul`` (its kernel converts bfloat16 to float32 on
load where it can, the small-M kernels; the others get operands cast to
float32 in MLX first; mlx_sgemm/ops.py says which) and ``matmul, cast first``
(both operands cast to float32 in MLX, then the float32 ``matmul``, rounded:
what every kernel did before they converted on load, so the two rows show what
converting on load saves). Error is normwise against float64 of the same
operands. Needs a CUDA or Metal GPU.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx  # noqa: E402

import mlx_sgemm  # noqa: E402
from mlx_sgemm.bench import accuracy, results, timing  # noqa: E402
from mlx_sgemm.bench.measure import sampled_error  # noqa: E402
from mlx_sgemm.dispatch import device  # noqa: E402

SHAPES = [  # (M, N, K, B is W.T)
    (4096, 4096, 4096, False),
    (1, 4096, 4096, True),
    (8, 14336, 4096, True),
    (2048, 4096, 4096, True),
]


def operands(m, n, k, transposed):
    a, b = accuracy.random_operands((m, k), (n, k) if transposed else (k, n))
    return a, (b.T if transposed else b)


def parse_shape(text: str) -> tuple[int, int, int, bool]:
    """MxNxK, or MxNxK:WT for x @ W.T."""
    dims, _, layout = text.partition(":")
    try:
        m, n, k = (int(v) for v in dims.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is MxNxK or MxNxK:WT, got {text!r}") from None
    if layout not in ("", "WT") or min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"a shape is MxNxK or MxNxK:WT with sizes >= 1, got {text!r}")
    return m, n, k, layout == "WT"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", default=None)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--shapes", nargs="+", type=parse_shape, default=SHAPES, metavar="MxNxK[:WT]")
    args = parser.parse_args()
    rows = []
    for m, n, k, transposed in args.shapes:
        a, b = operands(m, n, k, transposed)
        a16, b16 = a.astype(mx.bfloat16), b.astype(mx.bfloat16)
        mx.eval(a, b, a16, b16)
        fns = {
            ("mx.matmul", "float32"): lambda: mx.matmul(a, b),
            ("matmul", "float32"): lambda: mlx_sgemm.matmul(a, b),
            ("matmul deterministic", "float32"): lambda: mlx_sgemm.matmul(a, b, deterministic=True),
            ("mx.matmul", "bfloat16"): lambda: mx.matmul(a16, b16),
            ("matmul", "bfloat16"): lambda: mlx_sgemm.matmul(a16, b16),
            ("matmul, cast first", "bfloat16"): lambda: mlx_sgemm.matmul(
                a16.astype(mx.float32), b16.astype(mx.float32)).astype(mx.bfloat16),
        }
        medians = timing.alternating_medians(fns, rounds=3, repeats=args.repeats)
        base = {dt: medians[("mx.matmul", dt)] for dt in ("float32", "bfloat16")}
        shape = f"{m}x{n}x{k}" + (" W.T" if transposed else "")
        for (kernel, dtype), seconds in medians.items():
            x, y = (a16, b16) if dtype == "bfloat16" else (a, b)
            error = sampled_error(*(t.astype(mx.float32) for t in (fns[(kernel, dtype)](), x, y)))
            row = dict(device=device.name(), shape=shape, dtype=dtype, kernel=kernel,
                       us=round(seconds * 1e6, 2), tflops=round(timing.gflops(m, n, k, seconds) / 1e3, 2),
                       x_mx_matmul_same_dtype=round(base[dtype] / seconds, 3),
                       x_mx_matmul_float32=round(base["float32"] / seconds, 3), error=f"{error:.2e}")
            results.write_table([row], None)
            rows.append(row)
    results.write_table(rows, args.csv, echo=False)


if __name__ == "__main__":
    main()
