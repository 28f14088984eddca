"""Where the per-call time of a small product goes: the layers around our kernel.

    python benchmarks/call_overhead.py

For a few small products, each layer (the cuda_kernel object alone, handed
the sources inlined or included by path, inside an mx.custom_function, with
stop_gradient, launcher.launch, ops.matmul, ops.matmul under mx.compile, the launch
compiled, matmul's own compiled function for the shape, ops._compiled) is called
400 times and evaluated together: "build" is the Python time to make the graph,
"batched" the whole time per call. Next to mx.matmul, and next to four no-op
nodes (stop_gradient of stop_gradient...) to show what a node costs. GPU only
(CUDA).
"""

from __future__ import annotations

import os
import sys
import time

import mlx.core as mx  # noqa: E402

from mlx_sgemm import ops
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import launcher, sources
from mlx_sgemm.dispatch import device, kernel_choice, tuning_cache
from mlx_sgemm.dispatch.problem import plan  # noqa: E402

os.environ.setdefault("MLX_ENABLE_TF32", "0")


def per_call(fn, n: int = 400) -> tuple[float, float]:
    """(build, total) microseconds per call: the median of 7 batches of n."""
    for _ in range(20):
        mx.eval(fn())
    rows = []
    for _ in range(7):
        t0 = time.perf_counter()
        outs = [fn() for _ in range(n)]
        t1 = time.perf_counter()
        mx.eval(*outs)
        rows.append(((t1 - t0) / n * 1e6, (time.perf_counter() - t0) / n * 1e6))
    return sorted(rows, key=lambda r: r[1])[3]


def main() -> int:
    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend")
        return 1
    # (M, N, K, B a transposed view: x @ W.T)
    for m, n, k, transposed in [(1, 1024, 4096, False), (1, 4096, 4096, False), (1, 4096, 4096, True),
                                (128, 1024, 4096, False)]:
        a, b = accuracy.random_operands((m, k), (n, k) if transposed else (k, n))
        b = b.T if transposed else b
        mx.eval(a, b)
        how = kernel_choice.chooser("float32")(device.CUDA, plan(a.shape, b.shape))
        kernel, params, shape_args = launcher.kernel_call(how.spec, plan(a.shape, b.shape), how.k_splits)
        raw = lambda x, y: kernel(inputs=[x, y, params], **shape_args)[0]  # noqa: E731
        spec = how.spec
        inlined_kernel = mx.fast.cuda_kernel(  # the same kernel, its texts inlined (before 2026-11-22)
            name=spec.name + "_inlined", input_names=list(spec.input_names),
            output_names=list(spec.output_names), source=sources.for_compiler(spec.source()),
            header=sources.for_compiler(spec.header()), ensure_row_contiguous=spec.ensure_row_contiguous,
            shared_memory=spec.shared_memory)
        inlined = lambda x, y: inlined_kernel(inputs=[x, y, params], **shape_args)[0]  # noqa: E731
        compiled = mx.compile(ops.matmul)
        launch = mx.compile(lambda x, y: launcher.launch(spec, x, y))  # the kernel alone, compiled
        choose = kernel_choice.chooser("float32")
        ops.matmul(a, b)  # matmul's compiled function for this shape, as a call finds it
        matmul_compiled = ops._compiled(choose, device.CUDA, None, True, False, a.shape, b.shape,
                                        tuning_cache.generation(), launcher.poisoned(), device.current_stream())

        def no_ops(x, y):
            for _ in range(4):
                x = mx.stop_gradient(x)
            return x
        wrapped = mx.custom_function(raw)
        stopped = mx.custom_function(lambda x, y: raw(mx.stop_gradient(x), mx.stop_gradient(y)))
        print(f"== {m}x{n}x{k}{' W.T' if transposed else ''} ({how.spec.stage}, {device.name()})")
        layers = {
            "mx.matmul": lambda: mx.matmul(a, b),
            "4 no-op nodes": lambda: no_ops(a, b),
            "cuda_kernel, inlined": lambda: inlined(a, b),
            "cuda_kernel object": lambda: raw(a, b),
            "+ mx.custom_function": lambda: wrapped(a, b),
            "+ stop_gradient": lambda: stopped(a, b),
            "launcher.launch": lambda: launcher.launch(how.spec, a, b),
            "ops.matmul": lambda: ops.matmul(a, b),
            "mx.compile(ops.matmul)": lambda: compiled(a, b),
            "the launch, compiled": lambda: launch(a, b),
            "matmul's compiled function": lambda: matmul_compiled(a, b),
        }
        for name, fn in layers.items():
            build, total = per_call(fn)
            print(f"  {name:24s} build {build:6.1f} us   batched {total:6.1f} us/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
