"""``fp16_emulated``: a float32-accurate ``a @ b`` on the float16 tensor cores,
each operand split into two float16 parts (after Ootomo and Yokota,
"Recovering single precision accuracy from Tensor Cores while surpassing the
FP32 theoretical peak performance"), with per-line scaling to keep every part
in float16's range.

The method, line by line (A's rows, B's columns):

1. Scale each line by the power of two that puts its largest magnitude in
   [2^14, 2^15) (float16's largest finite value is 65504), so that its entries
   down to 2^-14 of that stay normal float16 numbers.
2. Split each scaled entry x into big = fp16(x) and small = fp16(x - big):
   11 + 11 significant bits, as 3xTF32's split keeps (TF32 and float16 both
   hold 11), but the float16 tensor cores are twice as fast as TF32's.
3. C' = small_A big_B + big_A small_B + big_A big_B (small x small, ~2^-22
   relative, dropped) on wgmma, float32 accumulation: each k-tile of 64 into a
   fresh accumulator that the FP32 units add to the running sum, the small
   products first (the tensor cores' adds round toward zero).
4. C = C' 2^-(shift of the row + shift of the column).

Where it applies: to each line whose exponent span (its 2-norm's exponent
less its smallest nonzero entry's, the INT8 emulation's span) is at most
:data:`MAX_SPAN`, so that no nonzero entry vanishes (and whose mean entry lies
at most MAX_SPAN + 1 bits below its norm bound). The split marks the other
lines on the device, and the outputs of their rows and columns come from the
float32 fallback (``tile_threads``) in the same queue, as do those of lines
holding Inf or NaN; every other output is the split's.

On a Hopper GPU: the kernels below (kernels/cuda/half_split.cu,
half_products.cu, with the INT8 emulation's statistics and fallback).
On MLX's CPU backend: ``mx.matmul``, like every op there; :func:`reference`
runs the same steps in numpy with exact sums (the GPU's tensor-core sums
differ in the last bits), for the tests. Elsewhere: ``matmul``.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ..build import specs
from ..dispatch import device, kernel_choice
from . import gpu
from . import scheme
from .op import as_2d_products

TOP = specs.HALF_SPLIT_TOP  # a line's largest magnitude is scaled into [2^(TOP-1), 2^TOP)
# The widest exponent span of a line (its norm exponent less its smallest
# nonzero entry's exponent, as the INT8 emulation counts it) the split takes.
# Scaled, that entry is then at least 2^(TOP - 1 - MAX_SPAN) = 2^-24, float16's
# smallest subnormal: no nonzero entry vanishes, the INT8 emulation's rule for
# its lines. Entries within 2^-28 of their line's norm bound keep a normal big
# part (11 bits) and those within 2^-16 all 22; the smaller ones keep an
# absolute precision of 2^-25 of the scaled line (2^-39 of its largest entry),
# far below float32's rounding of the large ones, so the normwise error does
# not notice them (large random matrices hold entries 2^-30 below their
# lines' norms: 8192^3 of normal entries spans 2^33). Componentwise, an output
# made only of such entries is as uncertain as in the INT8 emulation.
MAX_SPAN = specs.HALF_SPLIT_MAX_SPAN
# precision="tf32": the big part alone, one product, under the same rule: the
# entries within 2^-28 of their line's norm bound keep float16's 11
# significant bits (TF32 keeps 11), the smaller ones the absolute precision
# above. (Keeping 11 bits for every entry would take spans up to 28, and
# normal random matrices pass that: 4096 x 4096 of them span ~2^30.)
PARTS = specs.HALF_SPLIT_PARTS
K_TILE = gpu.K_TILE // 2  # halves of K a tile row holds (128 bytes)
SPLIT_BLOCK_LINES = 64  # lines a block of half_split.cu covers (by tiles)
WHOLE_K = specs.HALF_SPLIT_WHOLE_K  # the longest contiguous line half_split.cu reads whole


def split_blocks(per_tile: int, tiles: int, k_tiles: int) -> int:
    """Blocks of half_split.cu one operand takes (sgemm::split_blocks): a
    block a line (lines read whole) or one per 64 lines of a k-tile, whichever
    is more; which way applies is decided on the device."""
    return max(tiles * per_tile // SPLIT_BLOCK_LINES * k_tiles, tiles * per_tile)


def split_both(a: mx.array, bt: mx.array, a_stats: mx.array, b_stats: mx.array, a_per_tile: int,
               b_per_tile: int, parts: int = 2, stream=None) -> tuple[mx.array, mx.array, mx.array, mx.array]:
    """A's rows (a: M x K) and B^T's (bt: N x K), any strides, scaled and
    rounded to ``parts`` float16 parts, each in swizzled tiles of its
    ``per_tile`` rows, flat, in one launch; and the rows' statistics:
    ``a_stats`` and ``b_stats`` (gpu.line_stats with WHOLE_K), or, for the
    rows the kernel read whole, its own. Returns (a_parts, b_parts,
    a_stats, b_stats)."""
    (m, k), n = a.shape, bt.shape[0]
    k_tiles = max(1, -(-k // K_TILE))
    a_tiles, b_tiles = -(-m // a_per_tile), -(-n // b_per_tile)
    params = gpu._int32([m, n, k, k_tiles, a_per_tile, a_tiles, b_per_tile, b_tiles])
    blocks = split_blocks(a_per_tile, a_tiles, k_tiles) + split_blocks(b_per_tile, b_tiles, k_tiles)
    parts_shape = lambda per_tile, tiles: (parts * tiles * per_tile * k_tiles * K_TILE,)  # noqa: E731
    return tuple(gpu._launch_outputs(
        specs.cuda_half_split(parts), [a, bt, a_stats, b_stats, params],
        [(parts_shape(a_per_tile, a_tiles), mx.float16), (parts_shape(b_per_tile, b_tiles), mx.float16),
         (a_stats.shape, mx.float32), (b_stats.shape, mx.float32)],
        blocks * 256, stream))


def _choice() -> mx.array:
    """The choice words (gpu.CHOICE_WORDS) the fallback reads: the split (one
    "modulus"), and non_finite 1, so that the fallback's blocks look at their
    lines' statistics, where the split marked every line it does not take
    (sgemm::split_stats). A constant: no kernel decides it. (gpu.fixed_choice
    reads K only to find the bits, which are named here.)"""
    return gpu.fixed_choice(0, 1, MAX_SPAN + 1)


def _products(ah, bh, a_stats, b_stats, direct, m: int, n: int, k: int, spec: specs.KernelSpec,
              stream=None) -> mx.array:
    tiles_m, tiles_n = -(-m // spec.block_m), -(-n // spec.block_n)
    params = gpu._int32([m, n, max(1, -(-k // K_TILE)), tiles_m, tiles_n])
    return gpu._launch(spec, [ah, bh, a_stats, b_stats, direct, params], (m, n), mx.float32,
                       product_blocks(tiles_m * tiles_n) * spec.threadgroup[0], stream)


def product_blocks(tiles: int) -> int:
    """half_products.cu's grid: a block an SM (its ring fills the SM's shared
    memory), each taking every so many tiles, so that a block's producer
    fetches its next tile while its consumers store the last; a block a tile
    where the SMs are not known."""
    return min(tiles, device.cuda_multiprocessors() or tiles)


def _split(a: mx.array, b: mx.array, precision: str, stream=None):
    """The products' spec at ``precision``, and a's and b's parts and
    statistics (split_both): the operands' statistics, then their split, which
    takes them for lines it cannot read whole (and makes them for those it
    can) and marks the lines it does not take: two launches for both."""
    bt = b.T
    products = kernel_choice.half_split_spec(precision, a.shape[0], b.shape[1])
    a_read, b_read = gpu.line_stats(a, bt, stream, WHOLE_K)
    return products, *split_both(a, bt, a_read, b_read, products.block_m, products.block_n, PARTS[precision],
                                 stream)


def split_product(a: mx.array, b: mx.array, precision: str = "float32", stream=None) -> mx.array:
    """float32 a @ b (2-D float32, any strides) by the split on the GPU, all
    kernels queued at once: the statistics (both operands in one launch),
    the two splits (one launch, marking the lines they do not take), the
    fallback's tiles (those of marked lines), the products: four graph nodes."""
    m, k = a.shape
    n = b.shape[1]
    if min(m, n, k) == 0:
        return mx.zeros((m, n), dtype=mx.float32, stream=stream)
    products, ah, bh, a_stats, b_stats = _split(a, b, precision, stream)
    direct = gpu.fallback_product(a, b, _choice(), a_stats, b_stats, stream)
    return _products(ah, bh, a_stats, b_stats, direct, m, n, k, products, stream)


def split_lines(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy: the big and small float16 parts of x's rows (axis=1) or columns
    (axis=0), scaled, and each line's shift (half_split.cu's arithmetic:
    float32 scaling, float16 rounding to nearest)."""
    top = np.abs(x.astype(np.float32)).max(axis=axis, keepdims=True)
    shift = np.where(top > 0, TOP - np.frexp(top)[1], 0)
    scaled = np.ldexp(x.astype(np.float64), shift).astype(np.float32)
    big = scaled.astype(np.float16)
    small = (scaled - big.astype(np.float32)).astype(np.float16)
    return big, small, shift


def reference(a: np.ndarray, b: np.ndarray, precision: str = "float32") -> np.ndarray:
    """The split product in numpy (2-D finite float32 operands), its sums
    exact (float64): what the GPU computes but for the tensor cores' rounding.
    ``precision`` "tf32": big x big alone."""
    a_big, a_small, e = split_lines(a, 1)
    b_big, b_small, f = split_lines(b, 0)
    w = lambda x: x.astype(np.float64)  # noqa: E731
    c = w(a_big) @ w(b_big)
    if PARTS[precision] == 2:
        c = w(a_small) @ w(b_big) + w(a_big) @ w(b_small) + c
    return np.ldexp(c, -(e + f)).astype(np.float32)


def lines_fit(x: np.ndarray, axis: int) -> np.ndarray:
    """Which rows (axis=1) or columns (axis=0) of x the split takes: finite,
    span at most MAX_SPAN and lost bits at most MAX_SPAN + 1 (the rule the
    split applies on the device, sgemm::split_stats)."""
    _, lost, span = scheme.exponents(x, axis)
    return np.isfinite(x).all(axis=axis) & (span <= MAX_SPAN) & (lost <= MAX_SPAN + 1)


def reference_product(a: mx.array, b: mx.array, precision: str = "float32") -> mx.array:
    """What the GPU path computes for one 2-D product, in numpy on the host:
    :func:`reference` at the outputs whose row and column the split takes
    (:func:`lines_fit`), ``mx.matmul``'s (the device's float32 fallback) at
    those of a line too wide for float16's range or holding an Inf or NaN.
    For the tests: the op itself computes with ``mx.matmul`` on the CPU."""
    xn, yn = np.array(a.astype(mx.float32)), np.array(b.astype(mx.float32))
    rows, cols = lines_fit(xn, 1), lines_fit(yn, 0)
    c = reference(np.where(rows[:, None], xn, 0), np.where(cols[None, :], yn, 0), precision)
    taken = rows[:, None] & cols[None, :]
    if not taken.all():
        c = np.where(taken, c, np.array(mx.matmul(a, b, stream=mx.cpu)))
    return mx.array(c)


def lines_taken(a: mx.array, b: mx.array, stream=None) -> tuple[np.ndarray, np.ndarray]:
    """Which of A's rows and B's columns (2-D float32, any strides) the split
    takes on the GPU, read back from the statistics it hands on (a line it
    does not take has an infinite largest magnitude there): for the tests and
    benchmarks."""
    *_, a_stats, b_stats = _split(a, b, "float32", stream)
    return np.isfinite(np.array(a_stats[0])), np.isfinite(np.array(b_stats[0]))


def fp16_emulated(a: mx.array, b: mx.array, *, precision: str = "float32", stream=None) -> mx.array:
    """``a @ b`` at float32 accuracy on float16 tensor cores (each operand split
    into two float16 parts after per-line scaling; three products), or at
    TF32 accuracy (one part each, one product).

    Args:
        a, b: float32, float16 or bfloat16 arrays with ``mx.matmul``'s
            semantics (1-D operands, broadcast batch dimensions, any strides;
            the result has ``mx.matmul``'s dtype for them).
        precision: "float32" (two parts) or "tf32" (one part: an entry
            keeps float16's 11 significant bits, as TF32 keeps 11, down to
            2^-28 of its line's norm bound).
        stream: stream or device.

    On a Hopper GPU, the kernels of :func:`split_product`: a line whose
    exponent span passes :data:`MAX_SPAN`, and the tiles of lines holding Inf
    or NaN, are computed by the float32 fallback on the device, never waiting
    for the host. On MLX's CPU backend, ``mx.matmul``, like every op there
    (:func:`reference_product` is the GPU path's arithmetic in numpy).
    Elsewhere, ``matmul``.
    """
    from .. import ops
    from ..dispatch import kernel_choice

    kernel_choice.check_precision(precision)
    stream = device.canonical(stream)
    dtype = mx.result_type(a, b)
    p, pairs = as_2d_products(a, b, stream)
    if 0 in (p.M, p.N, p.K) or not pairs:
        return mx.zeros(p.out_shape, dtype=dtype, stream=stream)
    backend = device.backend(stream)
    if backend == device.CPU_FALLBACK:  # every op computes with mx.matmul there
        return mx.matmul(a, b, stream=stream)
    results = []
    for x, y in pairs:
        if backend == device.CUDA and device.has_wgmma():
            results.append(split_product(x, y, precision, stream))
        else:
            results.append(ops.matmul(x, y, precision=precision, stream=stream))
    c = results[0] if len(results) == 1 else mx.stack(results)
    return c.reshape(p.out_shape).astype(dtype, stream=stream)
