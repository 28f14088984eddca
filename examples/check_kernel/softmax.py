"""Check a softmax kernel written for mx.fast.metal_kernel, on a machine
without an Apple GPU (any Linux with `pip install "mlx-sgemm[check]"`).

    python examples/check_kernel/softmax.py

The kernel (softmax.metal) is handed to mlx_sgemm.metal_check.metal_kernel with
the arguments mx.fast.metal_kernel would get, and called as MLX's kernel is
called. It runs on the CPU with memcheck, racecheck, synccheck and initcheck;
its result is compared with NumPy's. Then the same kernel without the barrier
that keeps the maximum's partial values from being overwritten by the sum's:
racecheck names both threads and both lines. (A CPU run proves the logic; it
says nothing about the kernel's speed on an Apple GPU.)
"""

from pathlib import Path

import numpy as np

from mlx_sgemm import metal_check

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "softmax.metal"
REUSE_BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);  // all have read partial before it is reused\n"


def softmax_kernel(source: str):
    # The report names lines by this path: relative to here when it can be.
    path = SOURCE.relative_to(Path.cwd()) if SOURCE.is_relative_to(Path.cwd()) else SOURCE
    return metal_check.metal_kernel(
        name="softmax", input_names=["x"], output_names=["out"], source=source,
        source_path=str(path),
    )


def run(kernel, x):
    rows = x.shape[0]
    return kernel(
        inputs=[x], template=[("T", "float32")], grid=(256, rows, 1), threadgroup=(256, 1, 1),
        output_shapes=[x.shape], output_dtypes=["float32"],
    )


def main() -> int:
    x = np.random.default_rng(0).standard_normal((4, 1000)).astype(np.float32) * 10
    source = SOURCE.read_text()

    (y,), report = run(softmax_kernel(source), x)
    print(report)
    expected = np.exp(x - x.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    error = float(np.abs(y - expected).max())
    print(f"largest difference from NumPy's softmax: {error:.2e}")
    if not report.ok or error > 1e-6:
        return 1

    print("\nThe same kernel without the barrier before partial is reused:")
    _, report = run(softmax_kernel(source.replace(REUSE_BARRIER, "\n")), x)
    print(report)
    return 0 if report.by_check("racecheck") else 1


if __name__ == "__main__":
    raise SystemExit(main())
