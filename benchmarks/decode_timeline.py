"""Where a decode step's time goes, a model with ``replace_linear`` against the
unmodified one: the step's wall time, the host's time to build its graph, and
the GPU's kernels (count, names, durations: PyTorch's profiler, whose CUPTI
tracing sees MLX's kernels).

    DT=bfloat16 PREC=float32 python benchmarks/decode_timeline.py > benchmarks/results/decode-timeline-DATE-DEVICE.txt

mlx-lm's Llama with 4 layers of Llama 2 7B's shape (random weights,
mlx_sgemm.bench.models), the operands' dtype DT (bfloat16 unless named),
``replace_linear(precision=PREC)``. After a prompt of 512 tokens, each side
takes 5 steps of warm-up, 16 steps timed (the build of each step's graph timed
apart from its evaluation), then 16 steps under the profiler; the two sides
twice, in turn (MLX's, ours, MLX's, ours). Each step is evaluated before the
next, as benchmarks/model_speed.py times decode. Needs MLX's CUDA backend,
mlx-lm and PyTorch (the GPU machine has them).
"""
import collections
import os
import statistics
import time

STEPS = 16
SHOWN = 14  # kernels listed a side, the most frequent first


def summarize(events: list[dict], steps: int) -> dict:
    """A profiler trace of ``steps`` decode steps: kernels a step, their GPU
    time a step (ms), the SHOWN most frequent kernels (name's last 60
    characters, launches a step, mean us) and the CUDA API calls a step."""
    kernels = [e for e in events if e.get("cat") == "kernel"]
    names = collections.Counter(e["name"].split("(")[0][-60:] for e in kernels)
    runtime = collections.Counter(e["name"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver"))
    return {
        "kernels_a_step": len(kernels) / steps,
        "kernel_ms_a_step": sum(e["dur"] for e in kernels) / steps / 1e3,
        "most_frequent": [(kernel, count / steps,
                           sum(e["dur"] for e in kernels if e["name"].split("(")[0][-60:] == kernel) / count)
                          for kernel, count in names.most_common(SHOWN)],
        "runtime_calls_a_step": {k: round(v / steps, 1) for k, v in runtime.most_common(6)},
    }


def main() -> int:
    import torch  # noqa: F401 (the profiler's CUPTI)
    from torch.profiler import ProfilerActivity, profile

    import mlx.core as mx

    import mlx_sgemm
    from mlx_sgemm.bench import models, traces

    dtype = getattr(mx, os.environ.get("DT", "bfloat16"))
    theirs, ours = (models.build("llama", dtype, size="7b", layers=4) for _ in range(2))
    mlx_sgemm.nn.replace_linear(ours, precision=os.environ.get("PREC", "float32"))
    tokens = models.prompt(theirs, batch=1, length=512)
    for name, model in (("mlx", theirs), ("ours", ours), ("mlx", theirs), ("ours", ours)):
        step = models.decode_step(model, tokens)
        for _ in range(5):
            mx.eval(step())
        mx.synchronize()
        build = []
        start = time.perf_counter()
        for _ in range(STEPS):
            begun = time.perf_counter()
            out = step()
            build.append(time.perf_counter() - begun)
            mx.eval(out)
        wall = (time.perf_counter() - start) / STEPS
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            for _ in range(STEPS):
                mx.eval(step())
        summary = summarize(traces.profiler_events(prof), STEPS)
        print(f"== {name}: wall {wall * 1e3:.3f} ms/step, build {statistics.median(build) * 1e3:.3f} ms, "
              f"kernels/step {summary['kernels_a_step']:.1f}, kernel time {summary['kernel_ms_a_step']:.3f} ms/step",
              flush=True)
        for kernel, a_step, mean in summary["most_frequent"]:
            print(f"   {a_step:5.1f}/step {mean:7.1f} us  {kernel}")
        print("   runtime calls/step:", summary["runtime_calls_a_step"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
