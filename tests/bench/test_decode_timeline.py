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
