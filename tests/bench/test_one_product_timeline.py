"""benchmarks/one_product_timeline.py without a GPU: how it reads a profiler
trace into a row an evaluation (a synthetic Chrome trace of two evaluations,
in the shape PyTorch's profiler exports). The measuring itself needs the GPU
machine's PyTorch and MLX's CUDA backend."""

import csv
import json

from . import benchmark_scripts

RESULTS = benchmark_scripts.BENCHMARKS / "results"


def load():
    return benchmark_scripts.load("one_product_timeline")


def event(name, ts, dur, cat="cuda_runtime"):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "cat": cat}


# Evaluation 1: a graph launch at 100, two kernels (110-140, 141-341), MLX's
# wait from 120 to 400, mx.synchronize's from 405 to 410. Evaluation 2: two
# graph-node calls (430, 440), one kernel 500-1500, the wait returns at 1800.
# A host-side event of another kind, and one that is not complete ("B").
TRACE = [
    event("cudaGraphLaunch", 100, 5), event("cudaEventSynchronize", 120, 280),
    event("cudaStreamSynchronize", 405, 5), event("cudaGraphAddKernelNode", 430, 2),
    event("cudaGraphExecUpdate", 440, 20), event("cudaGraphAddKernelNode", 462, 3),
    event("mlx::core::cu::custom_kernel_sgemm_int8_line_stats_6e4a4dce9d18(float const*)", 110, 30, "kernel"),
    event("mlx::core::cu::custom_kernel_sgemm_half_products_31e2e5258bec_128_192_2(__half const*)", 141, 200,
          "kernel"),
    event("cudaGraphLaunch", 480, 5), event("cudaEventSynchronize", 490, 1310),
    event("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8", 500, 1000, "kernel"),
    event("cudaStreamSynchronize", 1801, 3), {"ph": "B", "name": "cudaEventSynchronize", "ts": 2000},
]


def test_a_row_an_evaluation_with_its_kernels_span_and_wait():
    first, second = load().summarize(TRACE)
    assert first == {"kernels": 2, "kernel_us": "int8_line_stats=30.0;half_products_128_192_2=200.0",
                     "span_us": 231.0, "host_before_launch_us": "", "api_before_launch_us": "",
                     "launch_to_first_kernel_us": 10.0, "wait_returned_after_last_kernel_us": 59.0}
    assert second["kernels"] == 1 and second["kernel_us"] == "sm80=1000.0"
    assert second["span_us"] == 1000.0 and second["wait_returned_after_last_kernel_us"] == 300.0
    # From the end of mx.synchronize's wait (410) to the launch (480), and the
    # API calls in between, longest first.
    assert second["host_before_launch_us"] == 70.0
    assert second["api_before_launch_us"] == "cudaGraphExecUpdate=20.0;cudaGraphAddKernelNode=5.0"


def test_from_trace_writes_the_rows_with_the_ops_in_turn(tmp_path):
    trace, out = tmp_path / "trace.json", tmp_path / "out.csv"
    trace.write_text(json.dumps({"traceEvents": TRACE}))
    assert load().main(["--from-trace", str(trace), "--device-name", "a GPU", "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["op"] for r in rows] == ["matmul", "mx.matmul"]
    assert rows[0]["device"] == "a GPU" and rows[0]["M"] == "4096"


def test_the_recorded_timelines_read_as_the_script_writes_them():
    for path in RESULTS.glob("one-product-timeline-*.csv"):
        rows = list(csv.DictReader(path.open()))
        assert {r["op"] for r in rows} == {"matmul", "mx.matmul"}
        assert all(float(r["span_us"]) > 0 and float(r["host_timed_median_us"]) > float(r["span_us"]) for r in rows)
