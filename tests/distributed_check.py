"""Run under `mlx.launch -n 2 ...` (ring backend on the CPU, NCCL on GPUs):
checks mlx_sgemm.distributed.matmul and the tensor-parallel layers against a
single-process mx.matmul on the same full matrices, gradients included.

    python -m mlx._distributed_utils.launch --backend ring -n 2 tests/distributed_check.py
    ... tests/distributed_check.py --time 16384    # also time the row split vs one GPU
"""

import argparse
import statistics
import time

import mlx.core as mx
import mlx.nn as nn
import numpy as np

import mlx_sgemm
from mlx_sgemm import distributed


def close(x, y, what, rank):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    scale = np.abs(y).max() + 1e-30
    err = np.abs(x - y).max() / scale
    assert x.shape == y.shape and err < 1e-5, f"rank {rank}: {what}: {x.shape} vs {y.shape}, error {err:.2e}"


def shard(x, axis, rank, size):
    return mx.split(x, size, axis=axis)[rank]


def check(group, kernel):
    rank, size = group.rank(), group.size()
    rng = np.random.default_rng(0)  # the same full matrices on every rank
    m, n, k = 37 * size, 29 * size, 23 * size
    a = mx.array(rng.standard_normal((m, k)).astype(np.float32))
    b = mx.array(rng.standard_normal((k, n)).astype(np.float32))
    full = mx.matmul(a, b, stream=mx.cpu)
    cot = mx.array(rng.standard_normal((m, n)).astype(np.float32))
    full_ga, full_gb = mx.vjp(lambda a, b: mx.matmul(a, b, stream=mx.cpu), [a, b], [cot])[1]
    for split, (a_axis, b_axis) in {"rows": (0, None), "cols": (None, 1), "k": (1, 0)}.items():
        a_s = a if a_axis is None else shard(a, a_axis, rank, size)
        b_s = b if b_axis is None else shard(b, b_axis, rank, size)
        f = lambda a_s, b_s: distributed.matmul(a_s, b_s, group, shard=split, kernel=kernel)  # noqa: E731
        close(f(a_s, b_s), full, f"{split} product", rank)
        # Gradients of <cot, C> w.r.t. this rank's shards (every rank passes the
        # same cotangent: MLX's collectives send back this rank's slice of it, or
        # pass it through, for a replicated result).
        ga, gb = mx.vjp(f, [a_s, b_s], [cot])[1]
        exp_a = full_ga if a_axis is None else shard(full_ga, a_axis, rank, size)
        exp_b = full_gb if b_axis is None else shard(full_gb, b_axis, rank, size)
        if a_axis is None:  # a replicated: each rank's gradient is its part of the sum
            ga = mx.distributed.all_sum(ga, group=group)
        if b_axis is None:
            gb = mx.distributed.all_sum(gb, group=group)
        close(ga, exp_a, f"{split} grad a", rank)
        close(gb, exp_b, f"{split} grad b", rank)

    # Tensor-parallel MLP: AllToSharded then ShardedToAll, from full layers.
    mx.random.seed(1)
    first, second = nn.Linear(k, 8 * size), nn.Linear(8 * size, 5)
    x = mx.array(rng.standard_normal((7, k)).astype(np.float32))
    reference = second(nn.relu(first(x)))
    l1 = mlx_sgemm.nn.AllToShardedLinear.from_linear(first, group=group, kernel=kernel)
    l2 = mlx_sgemm.nn.ShardedToAllLinear.from_linear(second, group=group, kernel=kernel)
    close(l2(nn.relu(l1(x))), reference, "sharded MLP", rank)
    gx = mx.grad(lambda x: mx.sum(l2(nn.relu(l1(x))) ** 2))(x)
    close(gx, mx.grad(lambda x: mx.sum(second(nn.relu(first(x))) ** 2))(x), "sharded MLP grad", rank)
    # replace_linear turns MLX's own sharded layers into ours.
    model = nn.Sequential(nn.AllToShardedLinear.from_linear(first, group=group),
                          nn.ReLU(), nn.ShardedToAllLinear.from_linear(second, group=group))
    mlx_sgemm.nn.replace_linear(model, kernel=kernel)
    assert isinstance(model.layers[0], mlx_sgemm.nn.AllToShardedLinear)
    assert isinstance(model.layers[2], mlx_sgemm.nn.ShardedToAllLinear)
    close(model(x), reference, "replaced sharded MLP", rank)


def median_time(fn, repeats=10):
    for _ in range(3):
        mx.eval(fn())
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        mx.eval(fn())
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def timing(group, n, kernel):
    rank, size = group.rank(), group.size()
    a = mx.random.normal((n // size, n))  # this rank's rows
    b = mx.random.normal((n, n))
    mx.eval(a, b)
    op = mlx_sgemm.ops.op_by_name(kernel)
    t_dist = median_time(lambda: distributed.matmul(a, b, group, shard="rows", kernel=kernel))
    t_local = median_time(lambda: op(a, b))
    local = op(a, b)
    mx.eval(local)
    t_comm = median_time(lambda: mx.distributed.all_gather(local, group=group))
    if rank == 0:
        full_a = mx.random.normal((n, n))
        mx.eval(full_a)
        t_one = median_time(lambda: op(full_a, b), repeats=5)
        print(f"{n}^3 {kernel}: one GPU {t_one * 1e3:.1f} ms; {size} GPUs, rows split "
              f"{t_dist * 1e3:.1f} ms (local product {t_local * 1e3:.1f} ms, all_gather "
              f"{t_comm * 1e3:.1f} ms = {100 * t_comm / t_dist:.0f}%); speed-up {t_one / t_dist:.2f}x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--time", type=int, default=0, help="also time a size^3 row split")
    parser.add_argument("--kernels", nargs="+", default=["matmul", "tile_simdgroup"])
    args = parser.parse_args()
    group = mx.distributed.init(strict=True)
    for kernel in args.kernels:
        check(group, kernel)
    print(f"rank {group.rank()}/{group.size()} ({mlx_sgemm.backend()}): distributed checks OK", flush=True)
    if args.time:
        timing(group, args.time, args.kernels[0])


if __name__ == "__main__":
    main()
