"""benchmarks/decode_timeline.py without a GPU: how it reads a profiler trace
of decode steps (a synthetic Chrome trace in the shape PyTorch's profiler
exports). The measuring itself needs the GPU machine's PyTorch, mlx-lm and
MLX's CUDA backend."""

from . import benchmark_scripts


def event(name, dur, cat):
    return {"ph": "X", "name": name, "ts": 0, "dur": dur, "cat": cat}


def test_a_trace_of_two_steps():
    gemv = "mlx::core::cu::custom_kernel_sgemm_half_gemv_9235c3dfce72_2_8_2_bfloat16_t(__nv_bfloat16 const*)"
    trace = [event(gemv, 30.0, "kernel"), event(gemv, 40.0, "kernel"), event("void rms_norm(float)", 4.0, "kernel"),
             event("cudaGraphAddKernelNode", 1.0, "cuda_runtime"), event("cudaGraphAddKernelNode", 1.0, "cuda_runtime"),
             event("cuLaunchKernel", 1.0, "cuda_driver"), event("python_function", 9.0, "python_function")]
    summary = benchmark_scripts.load("decode_timeline").summarize(trace, steps=2)
    assert summary["kernels_a_step"] == 1.5 and summary["kernel_ms_a_step"] == 0.037
    assert summary["most_frequent"][0] == (gemv.split("(")[0][-60:], 1.0, 35.0)
    assert summary["most_frequent"][1] == ("void rms_norm", 0.5, 4.0)
    assert summary["runtime_calls_a_step"] == {"cudaGraphAddKernelNode": 1.0, "cuLaunchKernel": 0.5}


def test_generated_tokens_time_the_hosts_two_parts_and_put_mlx_lm_back():
    """MODE=generate's measuring on a small model on the CPU: a token's wall
    time, its model calls and its async_evals timed apart, and mlx-lm's module
    handed back its own mlx.core."""
    import contextlib
    import importlib

    import mlx.core as mx
    import pytest

    pytest.importorskip("mlx_lm")
    from mlx_sgemm.bench import models

    script = benchmark_scripts.load("decode_timeline")
    model = models.build("llama", mx.float32, size="small", layers=1)
    entered = []

    class Around(contextlib.AbstractContextManager):
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *exc):
            return None

    wall, host = script.generated_tokens(model, models.prompt(model, batch=1, length=8), Around())
    assert entered == [True]
    assert set(host) == {"build", "dispatch"}
    assert 0 < host["build"] < wall and 0 < host["dispatch"] < wall
    assert importlib.import_module("mlx_lm.generate").mx is mx
