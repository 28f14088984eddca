"""benchmarks/half_kernel_times.py without a GPU: how it reads a profiler trace
(a synthetic Chrome trace in the shape PyTorch's profiler exports). The
measuring itself needs the GPU machine's PyTorch and MLX's CUDA backend."""

import pytest

from . import benchmark_scripts

script = benchmark_scripts.load("half_kernel_times")


def kernel(name, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur}


def test_each_evaluation_sums_its_kernels_in_the_order_they_started():
    product, split_sum = "custom_kernel_sgemm_half_wgmma_128_128(const bf16*)", "custom_kernel_split_sum(float*)"
    trace = [kernel(split_sum, 30, 2.0), kernel(product, 10, 20.0), kernel(product, 100, 22.0),
             kernel(split_sum, 130, 3.0), {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                           "ts": 5, "dur": 4.0}]
    assert script.evaluation_times(trace, 2) == [22.0, 25.0]
    assert script.kernel_names(trace) == "custom_kernel_sgemm_half_wgmma_128_128 | custom_kernel_split_sum"


def test_a_trace_that_does_not_split_into_the_evaluations_is_refused():
    with pytest.raises(ValueError, match="3 kernels"):
        script.evaluation_times([kernel("k", t, 1.0) for t in range(3)], 2)


def test_an_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="unknown kernel 'tile_32'"):
        script.product("tile_32", "bfloat16")
