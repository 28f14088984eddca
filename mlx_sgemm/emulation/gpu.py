"""The INT8 emulation on a Hopper GPU: Ozaki scheme II in three kernels.

1. :func:`line_stats` (kernels/cuda/int8_line_stats.cu) and :func:`residues`
   (kernels/cuda/int8_residues.cu): each row of A and
   each row of B^T (column of B; both read in place, any strides) scaled by
   its power of two to a 2-norm of at most 2^bits, truncated, reduced modulo
   each of the s moduli, written as int8 tiles in the layout the products copy
   in one piece.
2. :func:`products` (kernels/cuda/int8_products.cu): per modulus, the INT8
   wgmma product of the residues, reduced modulo p_i in the epilogue: s bytes
   an output reach memory, not s int32s.
3. :func:`reconstruct` (kernels/cuda/int8_reconstruct.cu): the CRT in float64
   and the unscaling, in the order of :func:`mlx_sgemm.emulation.scheme.reconstruct`,
   so that the result is the numpy reference's bit for bit; outputs of lines
   holding Inf or NaN recomputed in float32.

Operands here are 2-D float32; :mod:`mlx_sgemm.emulation.op` does the rest.
"""

from __future__ import annotations

import functools
import math
import struct

import mlx.core as mx
import numpy as np

from ..build import registry, specs
from . import moduli as _moduli
from . import scheme

K_TILE = 128  # bytes of K per residue tile row (sgemm::RESIDUE_K_TILE)
# sgemm::symmetric_residue reduces a scaled line value (below 2^bits) in 1 step
# below 2^29, 2 below 2^46: the most bits a side this path keeps.
MAX_BITS = 46
RECONSTRUCT_COLUMNS = 8  # outputs a thread of int8_reconstruct.cu makes (COLUMNS)


def reduction_steps(bits: int) -> int:
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be 1..{MAX_BITS}, got {bits}")
    return 1 if bits <= 29 else 2


@functools.lru_cache(maxsize=256)
def _int32_cached(values: tuple[int, ...]) -> mx.array:
    return mx.array(values, dtype=mx.int32)


def _int32(values) -> mx.array:
    """An int32 array of kernel parameters, made once per distinct tuple (an
    array from a list is a host-to-device copy at every call)."""
    return _int32_cached(tuple(int(v) for v in values))


def _launch(spec, inputs, shape, dtype, threads, stream):
    return registry.kernel(spec)(
        inputs=inputs, output_shapes=[shape], output_dtypes=[dtype],
        grid=(-(-threads // spec.threadgroup[0]) * spec.threadgroup[0], 1, 1),
        threadgroup=spec.threadgroup, template=list(spec.template) or None, stream=stream,
    )[0]


def line_stats(x: mx.array, stream=None) -> mx.array:
    """float32 [4, lines] for the rows of x (lines x K, any strides): largest
    magnitude (NaN or inf where the row holds one), sum of magnitudes, smallest
    nonzero magnitude (inf if none), norm exponent: scheme.line_extremes in one
    pass (kernels/cuda/int8_line_stats.cu)."""
    lines, k = x.shape
    return _launch(specs.cuda_int8_line_stats(), [x, _int32([lines, k])], (4, lines), mx.float32,
                   32 * lines, stream)


RESIDUE_BLOCK_LINES = 64  # lines a block of int8_residues.cu covers


def residues(x: mx.array, stats: mx.array, s: int, bits: int, lines_per_tile: int, stream=None) -> mx.array:
    """int8 residues of x's rows (lines x K, any strides; ``stats``: their
    line_stats) for the first s moduli, each line scaled to a 2-norm of at
    most 2^bits, in swizzled tiles of ``lines_per_tile`` rows
    (sgemm/int8_tiles.cuh), flat."""
    lines, k = x.shape
    tiles, k_tiles = -(-lines // lines_per_tile), max(1, -(-k // K_TILE))
    params = _int32([lines, k, lines_per_tile, tiles, k_tiles, s, reduction_steps(bits), bits,
                     *_moduli.MODULI[:s]])
    size = s * tiles * lines_per_tile * k_tiles * K_TILE
    blocks = tiles * lines_per_tile // RESIDUE_BLOCK_LINES * k_tiles
    return _launch(specs.cuda_int8_residues(), [x, stats, params], (size,), mx.int8, blocks * 256, stream)


def products(ra: mx.array, rb: mx.array, m: int, n: int, k: int, s: int, stream=None) -> mx.array:
    """int8 [s, M, Np]: per modulus, (RA_i RB_i^T) mod p_i, symmetric; Np is
    N padded to the products' tile (its last columns are padding)."""
    spec = specs.cuda_int8_products()
    tiles_m, tiles_n = -(-m // spec.block_m), -(-n // spec.block_n)
    np_ = tiles_n * spec.block_n
    k_tiles = max(1, -(-k // K_TILE))
    params = _int32([m, n, np_, k_tiles, tiles_m, tiles_n, s, *_moduli.MODULI[:s]])
    return _launch(spec, [ra, rb, params], (s, m, np_), mx.int8,
                   s * tiles_m * tiles_n * spec.threadgroup[0], stream)


def crt_words(s: int) -> tuple[int, ...]:
    """The CRT constants of s moduli as int32 words (each float64 low word
    first): hi_0.., lo_0.., P_hi, P_lo, 1/P (int8_reconstruct.cu)."""
    c = _moduli.crt(s)
    values = (*c.weights_hi, *c.weights_lo, c.product_hi, c.product_lo, c.product_inverse)
    return struct.unpack(f"<{2 * len(values)}i", struct.pack(f"<{len(values)}d", *values))


def reconstruct(q: mx.array, a_stats: mx.array, b_stats: mx.array, a: mx.array, bt: mx.array,
                s: int, bits: int, stream=None) -> mx.array:
    """float32 M x N from the residue products (CRT, unscaling by the lines'
    shifts, worked out from their statistics)."""
    _, m, np_ = q.shape
    n, k = bt.shape
    params = _int32([m, n, np_, k, s, bits])
    return _launch(specs.cuda_int8_reconstruct(), [q, a_stats, b_stats, _int32(crt_words(s)), a, bt, params],
                   (m, n), mx.float32, m * (np_ // RECONSTRUCT_COLUMNS), stream)


class Operands:
    """A product's operands as the kernels read them, A (M x K) and B^T (N x K)
    as views (no copies: the kernels take any strides), and their lines'
    statistics (line_stats), made once per call."""

    def __init__(self, a: mx.array, b: mx.array, stream=None):
        self.a, self.bt = a, b.T
        self.a_stats, self.b_stats = line_stats(self.a, stream), line_stats(self.bt, stream)

    def lines(self):
        """scheme.line_exponents of A's and B^T's finite lines, read back to
        the host (the pre-pass's one synchronization)."""
        out = []
        for stats, x in ((self.a_stats, self.a), (self.b_stats, self.bt)):
            top, total, low, norm_exp = np.array(stats)
            finite = np.isfinite(top)
            out.append(scheme.line_exponents(top[finite], total[finite], low[finite], norm_exp[finite], x.shape[1]))
        return out


def emulated(a: mx.array, b: mx.array, s: int, bits: int, stream=None,
             operands: Operands | None = None) -> mx.array:
    """float32 a @ b (2-D float32) by the scheme with s moduli, each line of A
    and of B^T scaled to a 2-norm of at most 2^bits (``operands``: a and b as
    the pre-pass prepared them)."""
    m, k = a.shape
    n = b.shape[1]
    _moduli.check_k(k)
    if min(m, n, k) == 0:
        return mx.zeros((m, n), dtype=mx.float32, stream=stream)
    x = operands or Operands(a, b, stream)
    ra = residues(x.a, x.a_stats, s, bits, specs.RESIDUE_TILE_M, stream)
    rb = residues(x.bt, x.b_stats, s, bits, specs.RESIDUE_TILE_N, stream)
    q = products(ra, rb, m, n, k, s, stream)
    return reconstruct(q, x.a_stats, x.b_stats, x.a, x.bt, s, bits, stream)


def int8_ops(m: int, n: int, k: int, s: int) -> float:
    """INT8 multiply-adds x 2 of the products, as the padded tiles do them."""
    tm, tn = specs.RESIDUE_TILE_M, specs.RESIDUE_TILE_N
    return 2.0 * s * math.ceil(m / tm) * tm * math.ceil(n / tn) * tn * max(1, math.ceil(k / K_TILE)) * K_TILE
