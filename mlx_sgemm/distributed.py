"""A matrix product sharded across an ``mx.distributed`` group.

Each rank holds one shard of the operands, multiplies it locally with an
mlx-sgemm kernel, and MLX's collectives (NCCL on NVIDIA, ring / JACCL / MPI on
Macs) assemble the full product, which every rank gets back. Gradients flow
through both: the collectives have their own vjps and the local product has
ours.

Which split pays, for C = A @ B with A (M, K) and B (K, N) over p ranks:

* ``shard="rows"``: each rank has M/p rows of A and all of B. No communication
  before the product; the M*N result is all-gathered. Pays when A is the large
  operand (many tokens, a batch) and B fits on every rank: data parallelism.
* ``shard="cols"``: each rank has all of A and N/p columns of B. Pays when B is
  the large operand (a weight matrix too big for one device); the result is
  all-gathered, as above.
* ``shard="k"``: each rank has a K/p slice of A's columns and of B's rows; the
  p partial products, each M*N, are summed with an all-reduce. Pays when K is
  large against M and N (the reduction moves M*N, not M*K or K*N), and when the
  operands already come split along K (the output of a row-sharded layer).
"""

from __future__ import annotations

import mlx.core as mx

from .ops import op_by_name

SHARDS = ("rows", "cols", "k")


def matmul(a: mx.array, b: mx.array, group=None, *, shard: str = "rows",
           kernel: str = "matmul", stream=None) -> mx.array:
    """The full ``A @ B`` on every rank, from this rank's shards ``a`` and ``b``.

    Args:
        a, b: this rank's shards (float32, 2-D or batched): for ``"rows"`` a is
            (..., M/p, K) and b the whole (..., K, N); for ``"cols"`` a is whole
            and b is (..., K, N/p); for ``"k"`` a is (..., M, K/p) and b
            (..., K/p, N). Shards follow rank order.
        group: the ``mx.distributed`` group (default: the global group).
        shard: ``"rows"``, ``"cols"`` or ``"k"`` (see the module docstring).
        kernel: the local product, ``"matmul"`` or a stage name.
    """
    if shard not in SHARDS:
        raise ValueError(f"shard must be one of {SHARDS}, got {shard!r}")
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, mx.array) or x.ndim < 2:
            raise ValueError(f"{name} must be an mlx.core.array with at least 2 dimensions")
    group = group or mx.distributed.init()
    local = op_by_name(kernel)(a, b, stream=stream)
    if group.size() == 1:
        return local
    if shard == "k":
        return mx.distributed.all_sum(local, group=group, stream=stream)
    # all_gather concatenates along the first axis: bring the sharded axis there.
    axis = local.ndim - 2 if shard == "rows" else local.ndim - 1
    gathered = mx.distributed.all_gather(mx.moveaxis(local, axis, 0, stream=stream), group=group, stream=stream)
    return mx.moveaxis(gathered, 0, axis, stream=stream)
