"""Where a product evaluated alone spends its time: the GPU's kernels, and the
wait for the host to see them done.

    python benchmarks/one_product_timeline.py --csv benchmarks/results/one-product-timeline-DATE-DEVICE.csv \\
        [--size 4096] [--precision float32] [--evaluations 3] [--trace trace.json]
    python benchmarks/one_product_timeline.py --from-trace trace.json --csv out.csv

Evaluates ``matmul`` and ``mx.matmul`` in turn, one product per evaluation
followed by ``mx.synchronize`` (as ``mlx-sgemm bench`` times them, calls "one
at a time"), under PyTorch's profiler, whose CUPTI tracing sees every kernel
of the process, MLX's included (PyTorch is on the GPU machine; MLX and it
share the CUDA driver). Per evaluation, a row: its kernels (name and
duration), the span from the first kernel's start to the last one's end,
the host's time before MLX's graph launch (from the end of the previous
evaluation's wait: the op's build and MLX's evaluation of each node) with the
CUDA API calls made in it, the time from the launch to the first kernel, and
how long after the last kernel MLX's wait for the evaluation
(cudaEventSynchronize, in ``mx.eval``) returned. Host-timed medians of the
same calls go beside them (``bench.timing.one_call_seconds``). --from-trace
summarizes a trace this script exported (any machine). MLX_ENABLE_TF32
follows --precision, set before MLX is imported (MLX reads it once).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

KERNEL_CATEGORY, SYNC = "kernel", "cudaEventSynchronize"
HOST_WAITS = (SYNC, "cudaStreamSynchronize")  # mx.eval's wait, mx.synchronize's
API_CATEGORIES = ("cuda_runtime", "cuda_driver")
OPS = ["matmul", "mx.matmul"]  # evaluated in this order, in turn


def summarize(events: list[dict]) -> list[dict]:
    """A row an evaluation of a Chrome trace's complete events ("ph" X): the
    kernels that started between the end of one cudaEventSynchronize (MLX's
    wait in mx.eval) and the end of the next belong to the evaluation that
    wait ended."""
    events = sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"])
    kernels = [e for e in events if e.get("cat") == KERNEL_CATEGORY]
    graph_launches = [e["ts"] for e in events if e["name"] == "cudaGraphLaunch"]
    host_waits = [e["ts"] + e["dur"] for e in events if e["name"] in HOST_WAITS]
    api_calls = [e for e in events if e.get("cat") in API_CATEGORIES]
    rows, since = [], float("-inf")
    for wait in (e for e in events if e["name"] == SYNC):
        returned = wait["ts"] + wait["dur"]
        mine = [k for k in kernels if since <= k["ts"] < returned]
        launches = [ts for ts in graph_launches if since <= ts < returned]
        since = returned
        if not mine:
            continue
        first, last = mine[0]["ts"], max(k["ts"] + k["dur"] for k in mine)
        rows.append({
            "kernels": len(mine),
            "kernel_us": ";".join(f"{_short(k['name'])}={k['dur']:.1f}" for k in mine),
            "span_us": round(last - first, 1),
            **_before_launch(launches[0] if launches else None, host_waits, api_calls),
            "launch_to_first_kernel_us": round(first - launches[0], 1) if launches else "",
            "wait_returned_after_last_kernel_us": round(returned - last, 1),
        })
    return rows


def _before_launch(launch: float | None, host_waits: list[float], api_calls: list[dict]) -> dict:
    """The host's time before an evaluation's graph launch, from the end of
    the last wait before it (the previous evaluation's mx.eval or
    mx.synchronize): the op's build, MLX's evaluation of each node and its
    graph update; and the CUDA API calls made in it, their time summed by
    name, longest first. Blank for a launch with no wait before it."""
    waits_before = [t for t in host_waits if launch is not None and t <= launch]
    if not waits_before:
        return {"host_before_launch_us": "", "api_before_launch_us": ""}
    start = max(waits_before)
    spent: dict[str, float] = {}
    for e in api_calls:
        if start <= e["ts"] < launch:
            spent[e["name"]] = spent.get(e["name"], 0.0) + e["dur"]
    return {"host_before_launch_us": round(launch - start, 1),
            "api_before_launch_us": ";".join(f"{name}={us:.1f}" for name, us in
                                             sorted(spent.items(), key=lambda item: -item[1]))}


def _short(name: str) -> str:
    """A kernel's name without MLX's prefix, digest and arguments."""
    name = name.split("(")[0].removeprefix("mlx::core::cu::custom_kernel_sgemm_")
    return name.split("_")[0] if name.startswith("sm") else "_".join(p for p in name.split("_") if not (
        len(p) == 12 and all(c in "0123456789abcdef" for c in p)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--precision", choices=("float32", "tf32"), default="float32")
    parser.add_argument("--evaluations", type=int, default=3, help="of each op, in turn")
    parser.add_argument("--trace", help="also write the profiler's Chrome trace here")
    parser.add_argument("--from-trace", help="summarize this trace instead of measuring")
    parser.add_argument("--device-name", default="", help="with --from-trace: the GPU it was taken on")
    parser.add_argument("--csv", required=True)
    args = parser.parse_args(argv)
    if args.from_trace:
        from mlx_sgemm.bench import traces

        rows = summarize(traces.trace_events(args.from_trace))
        for row, name in zip(rows, OPS * len(rows)):
            row["op"] = name
        common = {"device": args.device_name, "M": args.size, "N": args.size, "K": args.size,
                  "precision": args.precision}
    else:
        os.environ["MLX_ENABLE_TF32"] = "1" if args.precision == "tf32" else "0"
        rows, common = measure(args)
    from mlx_sgemm.bench import results

    results.write_table([{**common, **row} for row in rows], args.csv)
    return 0


def measure(args) -> tuple[list[dict], dict]:
    import torch  # noqa: F401 (the profiler's CUPTI)
    from torch.profiler import ProfilerActivity, profile

    import mlx.core as mx

    import mlx_sgemm
    from mlx_sgemm.bench import timing, traces
    from mlx_sgemm.dispatch import device

    n = args.size
    a, b = mx.random.normal((n, n)), mx.random.normal((n, n))
    mx.eval(a, b)
    ops = dict(zip(OPS, (lambda: mlx_sgemm.matmul(a, b, precision=args.precision), lambda: mx.matmul(a, b))))
    host = {name: timing.one_call_seconds(fn) for name, fn in ops.items()}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.evaluations):
            for fn in ops.values():
                mx.eval(fn())
                mx.synchronize()
    rows = summarize(traces.profiler_events(prof, args.trace))
    for row, name in zip(rows, OPS * args.evaluations):
        row["op"] = name
        row["host_timed_median_us"] = round(host[name] * 1e6, 1)
    common = {"device": device.name(), "mlx_version": mx.__version__, "date": datetime.date.today().isoformat(),
              "M": n, "N": n, "K": n, "precision": args.precision}
    return rows, common


if __name__ == "__main__":
    sys.exit(main())
