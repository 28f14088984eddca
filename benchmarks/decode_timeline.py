"""Where a decode step's time goes, a model with ``replace_linear`` against the
unmodified one: the step's wall time, the host's time to build its graph, and
the GPU's kernels (count, names, durations: PyTorch's profiler, whose CUPTI
tracing sees MLX's kernels).

    DT=bfloat16 PREC=float32 python benchmarks/decode_timeline.py > benchmarks/results/decode-timeline-DATE-DEVICE.txt

mlx-lm's Llama with LAYERS layers (4 unless named) of Llama 2 7B's shape
(random weights, mlx_sgemm.bench.models), the operands' dtype DT (bfloat16
unless named), ``replace_linear(precision=PREC)``. After a prompt of 512
tokens, each side takes 5 steps of warm-up, 16 steps timed (the build of each
step's graph timed apart from its evaluation), then 16 steps under the
profiler; the two sides twice, in turn (MLX's, ours, MLX's, ours). Each step
is evaluated before the next, as benchmarks/model_speed.py times decode. Needs
MLX's CUDA backend, mlx-lm and PyTorch (the GPU machine has them).

MODE=generate times tokens as ``mlx_lm.generate`` makes them instead
(mlx-lm's ``generate_step``: a step's graph built and handed to the GPU with
``mx.async_eval`` while the step before runs, so a token costs the longer of
the host's part and the GPU's). Each side's line then splits the host's part:
"build" the model's call (Python and MLX making the graph), "dispatch"
``mx.async_eval`` (MLX encoding the graph's kernels), both a token; the
profiler sees the tokens after the prompt's.
"""
import collections
import contextlib
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


def decoded_steps(model, tokens, around) -> tuple[float, dict]:
    """STEPS decode steps after ``tokens``, each evaluated before the next,
    the steps inside ``around`` (a profiler, or nothing): the wall time a
    step and {"build": the median step's graph-making time}."""
    import mlx.core as mx

    from mlx_sgemm.bench import models

    step = models.decode_step(model, tokens)
    mx.eval(step())
    mx.synchronize()
    build = []
    with around:
        start = time.perf_counter()
        for _ in range(STEPS):
            begun = time.perf_counter()
            out = step()
            build.append(time.perf_counter() - begun)
            mx.eval(out)
        wall = (time.perf_counter() - start) / STEPS
    return wall, {"build": statistics.median(build)}


def generated_tokens(model, tokens, around) -> tuple[float, dict]:
    """STEPS tokens after ``tokens`` as mlx-lm's ``generate_step`` makes them,
    those after the prompt's inside ``around``: the wall time a token and the
    host's time a token in the model's calls ("build") and in ``mx.async_eval``
    ("dispatch")."""
    import importlib

    import mlx.core as mx

    generate = importlib.import_module("mlx_lm.generate")
    spent = {"build": 0.0, "dispatch": 0.0}

    def timed(part, fn):
        def call(*args, **kwargs):
            begun = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - begun
        return call

    class Timed:  # the model, its calls timed; generate_step reads its layers through it
        __call__ = staticmethod(timed("build", model))

        def __getattr__(self, name):
            return getattr(model, name)

    class TimedMx:  # mlx.core as generate_step sees it, async_eval timed
        async_eval = staticmethod(timed("dispatch", mx.async_eval))

        def __getattr__(self, name):
            return getattr(mx, name)

    generate.mx = TimedMx()
    try:
        made = generate.generate_step(tokens[0], Timed(), max_tokens=STEPS + 1)
        next(made)  # the prompt's token
        mx.synchronize()
        spent.update(build=0.0, dispatch=0.0)
        with around:
            start = time.perf_counter()
            for _ in made:
                pass
            wall = (time.perf_counter() - start) / STEPS
    finally:
        generate.mx = mx
    return wall, {part: seconds / STEPS for part, seconds in spent.items()}


def main() -> int:
    import torch  # noqa: F401 (the profiler's CUPTI)
    from torch.profiler import ProfilerActivity, profile

    import mlx.core as mx

    import mlx_sgemm
    from mlx_sgemm.bench import models, traces

    dtype = getattr(mx, os.environ.get("DT", "bfloat16"))
    layers = int(os.environ.get("LAYERS", "4"))
    theirs, ours = (models.build("llama", dtype, size="7b", layers=layers) for _ in range(2))
    mlx_sgemm.nn.replace_linear(ours, precision=os.environ.get("PREC", "float32"))
    tokens = models.prompt(theirs, batch=1, length=512)
    steps = generated_tokens if os.environ.get("MODE", "decode") == "generate" else decoded_steps
    for name, model in (("mlx", theirs), ("ours", ours), ("mlx", theirs), ("ours", ours)):
        steps(model, tokens, contextlib.nullcontext())  # warm-up
        wall, host = steps(model, tokens, contextlib.nullcontext())
        prof = profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU])
        steps(model, tokens, prof)
        summary = summarize(traces.profiler_events(prof), STEPS)
        host_text = ", ".join(f"{part} {seconds * 1e3:.3f} ms" for part, seconds in host.items())
        print(f"== {name}: wall {wall * 1e3:.3f} ms/step, {host_text}, "
              f"kernels/step {summary['kernels_a_step']:.1f}, kernel time {summary['kernel_ms_a_step']:.3f} ms/step",
              flush=True)
        for kernel, a_step, mean in summary["most_frequent"]:
            print(f"   {a_step:5.1f}/step {mean:7.1f} us  {kernel}")
        print("   runtime calls/step:", summary["runtime_calls_a_step"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
