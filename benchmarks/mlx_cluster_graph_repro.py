"""Minimal reproducer, for MLX upstream: a custom CUDA kernel whose blocks run in
thread-block clusters makes a later custom kernel silently skip its work when
MLX's CUDA graphs are on (the default).

    python benchmarks/mlx_cluster_graph_repro.py      # needs MLX's CUDA backend, sm_90

What it does: two kernels made with ``mx.fast.cuda_kernel``, each evaluated on
its own, alternately:

- ``clustered``: out = x + 1 on 64 elements, 2 blocks of 32 threads, compiled
  with ``__cluster_dims__(2, 1, 1)`` (``mx.fast.cuda_kernel`` has no cluster
  argument, so a kernel author compiles the attribute in, as here by
  redefining ``__global__`` in the header);
- ``plain``: out = 2 x on 32 elements, one block, no cluster.

Expected: every result right. Seen on MLX 0.32.4, CUDA 13, an H100: with
graphs on, ``plain`` wrong in 20 of 20 rounds after ``clustered`` launches (its
output left as the buffer held it, no error raised), right in 20 of 20 run
alone; with ``MLX_USE_CUDA_GRAPHS=0``, all right. The script runs itself each
way in a fresh process and prints the counts.

Why: each evaluation here is a one-node graph with the same key (MLX keys its
cached executable graphs by node types and edges; a custom kernel is a plain
kernel node), so MLX updates the cached graph in place with
``cudaGraphExecUpdate``. That update does not carry a kernel node's cluster
shape over (MLX PR #2813, "Thread block cluster dimensions are not correctly
updated by cudaGraphExecUpdate", where MLX added the cluster shape of its own
kernels, a launch attribute, to the key). A custom kernel's cluster shape,
compiled in, is not in the key, so ``plain``'s one block is launched in
clusters of two, which cannot run, and its output keeps whatever the buffer
held. Possible fixes in MLX: put the function's required cluster shape
(``cudaFuncGetAttributes``: ``requiredClusterWidth`` and the rest) in the graph
key for custom kernels, or give ``mx.fast.cuda_kernel`` a cluster argument set
as a launch attribute, as MLX's own kernels do.

mlx-sgemm's TF32 kernel with A multicast to block pairs by TMA (the cuBLAS TF32
kernel's clusters) waits on this: docs/performance-log.md, "TMA multicast pairs
and MLX's CUDA graphs".
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

TRIALS = 20
CLUSTERED_HEADER = """
#undef __global__
#define __global__ __location__(global) __cluster_dims__(2, 1, 1)
"""
ONE_ELEMENT_A_THREAD = "const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"


def make_kernels():
    import mlx.core as mx

    clustered = mx.fast.cuda_kernel(
        name="add_one_clustered", input_names=["x"], output_names=["out"],
        source=ONE_ELEMENT_A_THREAD + "out[i] = x[i] + 1.0f;", header=CLUSTERED_HEADER)
    plain = mx.fast.cuda_kernel(
        name="times_two_plain", input_names=["x"], output_names=["out"],
        source=ONE_ELEMENT_A_THREAD + "out[i] = 2.0f * x[i];")

    def launch(kernel, x):
        (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[mx.float32],
                        grid=(x.size, 1, 1), threadgroup=(32, 1, 1))
        mx.eval(out)
        return np.array(out)

    return (lambda x: launch(clustered, x)), (lambda x: launch(plain, x))


def count_wrong(with_clustered: bool) -> tuple[int, int]:
    """Wrong results of (clustered, plain) in TRIALS rounds; with_clustered
    False runs plain alone, the control."""
    import mlx.core as mx

    clustered, plain = make_kernels()
    rng = np.random.default_rng()
    wrong_clustered = wrong_plain = 0
    for _ in range(TRIALS):
        if with_clustered:
            x = rng.standard_normal(64).astype(np.float32)
            wrong_clustered += not np.array_equal(clustered(mx.array(x)), x + 1)
        y = rng.standard_normal(32).astype(np.float32)
        wrong_plain += not np.array_equal(plain(mx.array(y)), 2 * y)
    return wrong_clustered, wrong_plain


def child(mode: str) -> None:
    alone = mode == "plain-alone"
    wrong_clustered, wrong_plain = count_wrong(with_clustered=not alone)
    clustered = "not run" if alone else f"wrong {wrong_clustered}/{TRIALS}"
    print(f"clustered {clustered}, plain wrong {wrong_plain}/{TRIALS}")


def main() -> int:
    import mlx.core as mx

    if not (mx.cuda.is_available() and mx.default_device() == mx.gpu):
        print("needs MLX's CUDA backend on a GPU with thread-block clusters (sm_90 or newer)")
        return 2
    print(f"MLX {mx.__version__}, {mx.device_info().get('device_name', 'CUDA GPU')}")
    runs = [("graphs on, plain alone", "plain-alone", {}),
            ("graphs on, alternating", "alternating", {}),
            ("graphs off, alternating", "alternating", {"MLX_USE_CUDA_GRAPHS": "0"})]
    failed = False
    for label, mode, env in runs:
        result = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True,
                                text=True, env={**os.environ, **env})
        failed |= result.returncode != 0
        print(f"{label:26s} {result.stdout.strip() or result.stderr.strip()[-400:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        sys.exit(main())
