"""Validation and shape logic for ``a @ b``: everything that happens before a launch.

Pure Python on shapes and dtypes, so it is tested without a GPU. It follows
``mx.matmul``'s rules:

* both operands need at least one dimension (0-D raises ``ValueError``);
* a 1-D ``a`` of shape (K,) is a row (1, K) and a 1-D ``b`` of shape (K,) a column
  (K, 1); the added dimension is dropped from the result again;
* the leading (batch) dimensions broadcast as in NumPy.

The kernels see every operand as a stack of row-major matrices. To keep the batch
index cheap (and under the CUDA backend's limit of 10 dimensions per array) runs
of batch dimensions that broadcast the same way are merged here, by a reshape
that costs nothing on a contiguous array.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import mlx.core as mx
import numpy as np

# The CUDA backend passes an array's shape and strides to a kernel in fixed-size
# arrays of this many entries (MAX_NDIM in mlx/backend/cuda/device/config.h).
MAX_KERNEL_NDIM = 10

# Layout of the int32 ``params`` input every kernel reads (mirrored by the enum
# ``Param`` in kernels/cuda/sgemm/params.cuh and kernels/metal/sgemm/): sizes, the tile counts, and the output's batch
# shape, which the kernel needs to split its batch index into coordinates. After
# the batch shape comes the length of a K split (both headers' locate_tile, see
# Plan.params; K itself when K is not split).
P_M, P_N, P_K, P_TILES_M, P_TILES_N, P_BATCH_NDIM, P_BATCH_SHAPE = range(7)
# Kept at 8 entries or more: Metal passes inputs of fewer than 8 elements in the
# `constant` address space, which would give the kernel a second signature.
MIN_PARAMS = 8
# Kernels that copy by TMA find the tensor maps of A, B and B^T (32 words each,
# mlx_sgemm/build/tensormap.py) from here on in ``params`` (sgemm::P_TENSOR_MAPS in
# kernels/cuda/sgemm/params.cuh): past the longest batch shape (MAX_KERNEL_NDIM - 2).
TENSOR_MAPS = 16
# A persistent kernel (half_wgmma) finds how many blocks share an output matrix
# in the word before the maps (sgemm::P_BLOCKS_PER_MATRIX).
BLOCKS_PER_MATRIX = TENSOR_MAPS - 1

# A launch's grid is given in threads as a C int (and CUDA's x axis holds at most
# 2**31 - 1 blocks): the bound on how many threadgroups one launch can address.
MAX_GRID_X = 2**31 - 1


# What the ops take: each operand float32, float16 or bfloat16, in any mix
# (mlx_sgemm/ops.py: halves are products in float32, returned in mx.matmul's dtype).
OPERAND_DTYPES = (mx.float32, mx.float16, mx.bfloat16)


def dtype_name(dtype: mx.Dtype) -> str:
    """The dtype's short name: "float16" for mx.float16 (str() gives "mlx.core.float16")."""
    return str(dtype).rpartition(".")[2]


def check_operand(x, name: str, dtypes: tuple = (mx.float32,), *, scalar_ok: bool = False) -> None:
    """Raise ``TypeError`` unless ``x`` is an ``mx.array`` of one of ``dtypes``
    (default: float32 alone, what a kernel reads) with a dimension (or without
    one, where ``scalar_ok``: gemm's ``c`` broadcasts)."""
    if not isinstance(x, mx.array) or x.dtype not in dtypes:
        names = [dtype_name(d) for d in dtypes]
        allowed = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        if not isinstance(x, mx.array):
            raise TypeError(f"{name} must be an mlx.core.array of dtype {allowed}, got {type(x).__name__}")
        raise TypeError(f"{name} must have dtype {allowed}, got {dtype_name(x.dtype)}")
    if x.ndim == 0 and not scalar_ok:
        raise ValueError(f"{name} must have at least one dimension, got a 0-D array")


def check_bool(value, name: str) -> None:
    """Raise ``TypeError`` unless ``value`` is True or False: a flag given
    "yes" (or 1) is a mistake to name, not a truth value to guess."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")


@dataclass(frozen=True)
class Plan:
    """How one ``a @ b`` maps onto a kernel launch."""

    out_shape: tuple[int, ...]  # what the user gets back
    a_shape: tuple[int, ...]  # operand shapes the kernel sees (batch dims merged)
    b_shape: tuple[int, ...]
    batch_shape: tuple[int, ...]  # merged, broadcast batch shape of the output
    M: int
    N: int
    K: int

    @property
    def batch(self) -> int:
        return math.prod(self.batch_shape)

    @property
    def empty(self) -> bool:
        """Nothing to launch: the result has no elements or K is 0 (all zeros)."""
        return self.M == 0 or self.N == 0 or self.K == 0 or self.batch == 0

    def kernel_out_shape(self, k_splits: int = 1) -> tuple[int, ...]:
        """The kernel's output: with K split, one partial product per split,
        stacked on a leading axis (their sum is the product)."""
        splits = (k_splits,) if k_splits > 1 else ()
        return (*splits, *self.batch_shape, self.M, self.N)

    def k_split_length(self, k_splits: int, k_tile: int = 32) -> int:
        """How much of K each of ``k_splits`` splits takes: a multiple of the
        kernel's k-tile (32, or half_wgmma's 64), so that every split starts
        16-byte aligned and on a k-tile boundary."""
        return -(-self.K // (k_tile * k_splits)) * k_tile if k_splits > 1 else self.K

    def tiles(self, block_m: int, block_n: int) -> tuple[int, int]:
        return -(-self.M // block_m), -(-self.N // block_n)

    def tile_count(self, block_m: int, block_n: int) -> int:
        """The output's tiles of block_m x block_n, over every batch entry."""
        tiles_m, tiles_n = self.tiles(block_m, block_n)
        return tiles_m * tiles_n * self.batch

    def params(self, block_m: int, block_n: int, k_splits: int = 1, k_tile: int = 32) -> list[int]:
        """The ``params`` input for a kernel whose threadgroups compute block_m x
        block_n in k-tiles of ``k_tile``, with K split ``k_splits`` ways (split-K:
        each threadgroup then takes one split's stretch of K and writes its own
        partial product)."""
        values = [self.M, self.N, self.K, *self.tiles(block_m, block_n)]
        values += [len(self.batch_shape), *self.batch_shape, self.k_split_length(k_splits, k_tile)]
        return values + [0] * (MIN_PARAMS - len(values))

    def grid(self, block_m: int, block_n: int, threadgroup: tuple[int, int, int], k_splits: int = 1):
        """Grid in threads: one threadgroup per output tile per batch entry, all on x.

        The kernel recovers (batch, tile row, tile column) from its threadgroup's x
        position. Putting everything on x avoids CUDA's 65535-block limit on y and z,
        and the grid is a whole number of threadgroups: Metal's dispatchThreads would
        otherwise make edge threadgroups partial, while CUDA rounds up.
        """
        tiles_m, tiles_n = self.tiles(block_m, block_n)
        tx, ty, tz = threadgroup
        groups = k_splits * self.batch * tiles_m * tiles_n
        if groups * tx > MAX_GRID_X:
            raise ValueError(
                f"a batch of {self.batch} outputs of {self.M}x{self.N} needs {groups} "
                f"threadgroups of {block_m}x{block_n} outputs, more than one launch "
                f"can address ({MAX_GRID_X // tx})"
            )
        return groups * tx, ty, tz


def _broadcast_batch(a_batch, b_batch, a_full, b_full):
    nd = max(len(a_batch), len(b_batch))
    a_batch = (1,) * (nd - len(a_batch)) + tuple(a_batch)
    b_batch = (1,) * (nd - len(b_batch)) + tuple(b_batch)
    out = []
    for da, db in zip(a_batch, b_batch):
        if da != db and da != 1 and db != 1:
            raise ValueError(
                f"batch dimensions of a {a_full} and b {b_full} cannot be broadcast"
            )
        out.append(max(da, db) if da and db else 0)
    return a_batch, b_batch, tuple(out)


def _merge_batch(a_batch, b_batch, out_batch):
    """Merge neighbouring batch dims that broadcast alike; drop dims of size 1.

    Two neighbours can merge when, for each operand, both are present (size equal
    to the output's) or both are broadcast (size 1): the merged dim then indexes
    that operand exactly as the pair did.
    """
    merged_a, merged_b, merged_out = [], [], []
    prev_kind = None  # how the last kept dim broadcasts: (a present, b present)
    for da, db, do in zip(a_batch, b_batch, out_batch):
        if do == 1:
            continue
        kind = (da == do, db == do)
        if kind == prev_kind:
            merged_a[-1] *= da
            merged_b[-1] *= db
            merged_out[-1] *= do
        else:
            merged_a.append(da)
            merged_b.append(db)
            merged_out.append(do)
        prev_kind = kind
    return tuple(merged_a), tuple(merged_b), tuple(merged_out)


def plan(a_shape, b_shape) -> Plan:
    """Check two operand shapes like ``mx.matmul`` and plan the launch."""
    return _plan(tuple(a_shape), tuple(b_shape))


# Every op call plans its shapes (and the custom function's forward again): a
# few microseconds each, which small products feel (docs/performance-log.md,
# "Per-call cost"). A shape pair's plan never changes; errors are not cached.
@functools.lru_cache(maxsize=4096)
def _plan(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> Plan:
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise ValueError(
            f"matmul operands need at least one dimension, got a {a_shape} and b {b_shape}"
        )
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    M, K = a2[-2:]
    Kb, N = b2[-2:]
    if K != Kb:
        raise ValueError(
            f"inner dimensions differ: a {a_shape} has K={K} but b {b_shape} has K={Kb}"
        )
    a_batch, b_batch, out_batch = _broadcast_batch(a2[:-2], b2[:-2], a_shape, b_shape)
    out_shape = out_batch
    if len(a_shape) > 1:
        out_shape += (M,)
    if len(b_shape) > 1:
        out_shape += (N,)
    if 0 in out_batch:
        a_batch, b_batch, out_batch = (0,), (0,), (0,)
    else:
        a_batch, b_batch, out_batch = _merge_batch(a_batch, b_batch, out_batch)
    if len(out_batch) + 2 > MAX_KERNEL_NDIM:
        raise ValueError(
            f"a {a_shape} @ b {b_shape} has more alternating broadcast batch "
            f"dimensions than a kernel can index ({MAX_KERNEL_NDIM - 2})"
        )
    return Plan(
        out_shape=out_shape,
        a_shape=(*a_batch, M, K),
        b_shape=(*b_batch, K, N),
        batch_shape=out_batch,
        M=M,
        N=N,
        K=K,
    )
