"""The INT8 emulation on a Hopper GPU: Ozaki scheme II in kernels that are
all queued at once, none waiting for another's result on the host.

1. :func:`line_stats` (kernels/cuda/int8_line_stats.cu): each row of A and of
   B^T (column of B), read in place with any strides, both in one launch: the
   statistics the scaling and the choice need.
2. :func:`choose` (kernels/cuda/int8_choice.cu): the moduli and bits a side,
   or why the scheme cannot carry the product, made on the device by the rule
   of :func:`mlx_sgemm.emulation.scheme.decide` (:meth:`Operands.assessment`
   reads it back when asked). The kernels after it read it where they run, so their grids
   are sized for the most moduli the path takes (:data:`MAX_MODULI`) and the
   blocks of moduli past the choice stop at once.
3. :func:`residues` (kernels/cuda/int8_residues.cu): each line scaled by its
   power of two to a 2-norm of at most 2^bits, truncated, reduced modulo each
   modulus, written as int8 tiles in the layout the products copy in one piece.
4. :func:`products` (kernels/cuda/int8_products.cu): per modulus, the INT8
   wgmma product of the residues, reduced modulo p_i in the epilogue: s bytes
   an output reach memory, not s int32s.
5. :func:`fallback_product`: tile_threads, float32, for the tiles the scheme
   does not give (every tile when the choice has no moduli; else those whose
   lines hold an Inf or NaN), its other blocks stopping at once.
6. :func:`reconstruct` (kernels/cuda/int8_reconstruct.cu): the CRT in float64
   and the unscaling, in the order of :func:`mlx_sgemm.emulation.scheme.reconstruct`,
   so that the result is the numpy reference's bit for bit; the fallback's
   outputs where the scheme gives none.

Operands here are 2-D float32; :mod:`mlx_sgemm.emulation.op` does the rest.
"""

from __future__ import annotations

import functools
import math
import struct

import mlx.core as mx
import numpy as np

from ..build import launcher, registry, specs
from . import moduli as _moduli
from . import scheme

K_TILE = 128  # bytes of K per residue tile row (sgemm::RESIDUE_K_TILE)
# sgemm::symmetric_residue reduces a scaled line value (below 2^bits) in 1 step
# below 2^29, 2 below 2^46: the most bits a side this path keeps.
MAX_BITS = 46
RECONSTRUCT_COLUMNS = 8  # outputs a thread of int8_reconstruct.cu makes (COLUMNS)
# The most moduli the path takes: those that carry MAX_BITS.
MAX_MODULI = _moduli.moduli_for(1, MAX_BITS)
# The choice's words (sgemm::ChoiceWord in kernels/cuda/sgemm/int8_tiles.cuh).
CHOICE_WORDS = ("moduli", "bits", "reason", "a_lost", "b_lost", "a_span", "b_span", "wide_operand",
                "wide_line", "non_finite")


@functools.lru_cache(maxsize=256)
def _int32_cached(values: tuple[int, ...]) -> mx.array:
    return mx.array(values, dtype=mx.int32)


def _int32(values) -> mx.array:
    """An int32 array of kernel parameters, made once per distinct tuple (an
    array from a list is a host-to-device copy at every call)."""
    return _int32_cached(tuple(int(v) for v in values))


def _launch_outputs(spec, inputs, outputs, threads, stream) -> list[mx.array]:
    """The kernel of ``spec`` on ``threads`` threads (whole threadgroups);
    ``outputs``: (shape, dtype) of each."""
    return registry.kernel(spec)(
        inputs=inputs, output_shapes=[shape for shape, _ in outputs],
        output_dtypes=[dtype for _, dtype in outputs],
        grid=(-(-threads // spec.threadgroup[0]) * spec.threadgroup[0], 1, 1),
        threadgroup=spec.threadgroup, template=list(spec.template) or None, stream=stream,
    )


def _launch(spec, inputs, shape, dtype, threads, stream) -> mx.array:
    return _launch_outputs(spec, inputs, [(shape, dtype)], threads, stream)[0]


def line_stats(a: mx.array, bt: mx.array, stream=None, whole_k: int = 0) -> tuple[mx.array, mx.array]:
    """float32 [4, M] and [4, N]: the statistics of A's rows and of B^T's rows
    (a: M x K, bt: N x K, any strides): largest magnitude (NaN or inf where
    the row holds one), sum of magnitudes, smallest nonzero magnitude (inf if
    none), norm exponent: scheme.line_extremes in one pass over each, both in
    one launch (kernels/cuda/int8_line_stats.cu). ``whole_k``: for an operand
    whose rows turn out contiguous on the device with K <= whole_k, nothing
    is written (the float16 split reads such rows whole and takes their
    statistics itself)."""
    (m, k), n = a.shape, bt.shape[0]
    blocks = _line_stats_blocks(m) + _line_stats_blocks(n)
    return tuple(_launch_outputs(specs.cuda_int8_line_stats(), [a, bt, _int32([m, n, k, whole_k])],
                                 [((4, m), mx.float32), ((4, n), mx.float32)], 256 * blocks, stream))


def _line_stats_blocks(lines: int) -> int:
    """Blocks of int8_line_stats.cu an operand of ``lines`` lines takes
    (sgemm::line_stats_blocks: 8 lines a block)."""
    return -(-lines // 8)


@functools.lru_cache(maxsize=256)
def _choice_rule(k: int) -> tuple[int, ...]:
    """int8_choice.cu's rule at K: the target bits, the path's bounds, and the
    bits each count of moduli carries (made once per K: the op asks every call)."""
    table = [_moduli.bits_for(max(k, 1), s) for s in range(1, len(_moduli.MODULI) + 1)]
    return (k, scheme.default_target_bits(k), MAX_BITS, MAX_MODULI, *table)


def choose(a_stats: mx.array, b_stats: mx.array, m: int, n: int, k: int, stream=None) -> mx.array:
    """The choice (int32 words, :data:`CHOICE_WORDS`) from the lines'
    statistics, on the device: scheme.decide's rule with its default target
    bits at this K, at most MAX_BITS a side and MAX_MODULI moduli."""
    params = _int32([m, n, *_choice_rule(k)])
    return _launch(specs.cuda_int8_choice(), [a_stats, b_stats, params], (len(CHOICE_WORDS),), mx.int32,
                   1024, stream)


def fixed_choice(k: int, s: int, bits: int | None = None) -> mx.array:
    """The choice when the caller names the moduli: s and the bits they carry
    at K (or fewer, ``bits``); non_finite 1, since no kernel has looked: the
    fallback's blocks look at their lines."""
    bits = _moduli.bits_for(max(k, 1), s) if bits is None else bits
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"{s} moduli keep {bits} bits a side, outside this path's 1..{MAX_BITS}")
    words = dict.fromkeys(CHOICE_WORDS, 0) | dict(moduli=s, bits=bits, non_finite=1)
    return _int32(list(words.values()))


RESIDUE_BLOCK_LINES = 64  # lines a block of int8_residues.cu covers


def residues(x: mx.array, stats: mx.array, choice: mx.array, s_max: int, lines_per_tile: int,
             stream=None) -> mx.array:
    """int8 residues of x's rows (lines x K, any strides; ``stats``: their
    line_stats) for the choice's moduli (room for ``s_max``), each line scaled
    to a 2-norm of at most 2^bits, in swizzled tiles of ``lines_per_tile``
    rows (sgemm/int8_tiles.cuh), flat."""
    lines, k = x.shape
    tiles, k_tiles = -(-lines // lines_per_tile), max(1, -(-k // K_TILE))
    params = _int32([lines, k, lines_per_tile, tiles, k_tiles, *_moduli.MODULI[:s_max]])
    size = s_max * tiles * lines_per_tile * k_tiles * K_TILE
    blocks = tiles * lines_per_tile // RESIDUE_BLOCK_LINES * k_tiles
    return _launch(specs.cuda_int8_residues(), [x, stats, choice, params], (size,), mx.int8, blocks * 256,
                   stream)


def least_moduli(k: int) -> int:
    """The fewest moduli the device's choice can name at K: those that carry
    the target bits (every line's lost bits are at least 0)."""
    return _moduli.moduli_for(max(k, 1), scheme.default_target_bits(k))


def products(ra: mx.array, rb: mx.array, choice: mx.array, m: int, n: int, k: int, s_max: int,
             s_min: int, stream=None) -> mx.array:
    """int8 [s_max, M, Np]: per modulus of the choice (s_min to s_max of them),
    (RA_i RB_i^T) mod p_i, symmetric; Np is N padded to the products' tile (its
    last columns are padding). Moduli past the choice's are not written. s_min
    blocks a tile, each taking every s_min-th modulus."""
    spec = specs.cuda_int8_products()
    tiles_m, tiles_n = -(-m // spec.block_m), -(-n // spec.block_n)
    np_ = tiles_n * spec.block_n
    k_tiles = max(1, -(-k // K_TILE))
    params = _int32([m, n, np_, k_tiles, tiles_m, tiles_n, *_moduli.MODULI[:s_max]])
    return _launch(spec, [ra, rb, choice, params], (s_max, m, np_), mx.int8,
                   s_min * tiles_m * tiles_n * spec.threadgroup[0], stream)


def fallback_product(a: mx.array, b: mx.array, choice: mx.array, a_stats: mx.array, b_stats: mx.array,
                     stream=None) -> mx.array:
    """float32 a @ b by tile_threads, only in the tiles the scheme does not
    give (every tile when the choice has no moduli; else those whose lines hold
    an Inf or NaN): the rest of the result is never written, and never read.
    2-D operands: the fallback's persistent blocks walk one matrix's tiles."""
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"the fallback multiplies 2-D operands; got a {a.shape} and b {b.shape}")
    return launcher.launch(specs.cuda_int8_fallback(), a, b, stream, choice=choice, a_stats=a_stats,
                           b_stats=b_stats)


@functools.lru_cache(maxsize=32)
def crt_table(s_max: int) -> tuple[int, ...]:
    """The CRT constants of 1, 2, .., s_max moduli in turn, as int32 words
    (:func:`crt_words` each): s's start 2 (s - 1)(s + 3) words in."""
    return tuple(w for s in range(1, s_max + 1) for w in crt_words(s))


def crt_words(s: int) -> tuple[int, ...]:
    """The CRT constants of s moduli as int32 words (each float64 low word
    first): hi_0.., lo_0.., P_hi, P_lo, 1/P (int8_reconstruct.cu)."""
    c = _moduli.crt(s)
    values = (*c.weights_hi, *c.weights_lo, c.product_hi, c.product_lo, c.product_inverse)
    return struct.unpack(f"<{2 * len(values)}i", struct.pack(f"<{len(values)}d", *values))


def reconstruct(q: mx.array, a_stats: mx.array, b_stats: mx.array, choice: mx.array, direct: mx.array,
                n: int, stream=None) -> mx.array:
    """float32 M x N from the residue products (CRT, unscaling by the lines'
    shifts, worked out from their statistics), the fallback's ``direct``
    outputs where the scheme gives none."""
    s_max, m, np_ = q.shape
    params = _int32([m, n, np_])
    return _launch(specs.cuda_int8_reconstruct(),
                   [q, a_stats, b_stats, _int32(crt_table(s_max)), choice, direct, params],
                   (m, n), mx.float32, m * (np_ // RECONSTRUCT_COLUMNS), stream)


class Operands:
    """A product's operands as the kernels read them, A (M x K), B (K x N) and
    B^T (N x K) as views (no copies: the kernels take any strides), their
    lines' statistics (line_stats) and the device's choice from them, made
    once per call. Nothing here waits for the GPU."""

    def __init__(self, a: mx.array, b: mx.array, stream=None):
        self.a, self.b, self.bt = a, b, b.T
        self.a_stats, self.b_stats = line_stats(self.a, self.bt, stream)
        m, k = a.shape
        self.choice = choose(self.a_stats, self.b_stats, m, b.shape[1], k, stream)

    def assessment(self) -> scheme.Assessment:
        """The device's choice, read back (a synchronization: for
        :func:`mlx_sgemm.emulation.op.assess`; the op never reads it)."""
        w = dict(zip(CHOICE_WORDS, (int(v) for v in np.array(self.choice))))
        return scheme.assessment(self.a.shape[1], w["moduli"], w["bits"], w["reason"], (w["a_lost"], w["b_lost"]),
                                 (w["a_span"], w["b_span"]), w["wide_operand"], w["wide_line"], MAX_BITS,
                                 MAX_MODULI)


def emulated(a: mx.array, b: mx.array, s: int | None = None, stream=None, bits: int | None = None) -> mx.array:
    """float32 a @ b (2-D float32) by the scheme: with the device's choice of
    moduli and bits (``s`` None), or with s moduli and the bits they carry (or
    ``bits``)."""
    m, k = a.shape
    n = b.shape[1]
    _moduli.check_k(k)
    if min(m, n, k) == 0:
        return mx.zeros((m, n), dtype=mx.float32, stream=stream)
    x = Operands(a, b, stream)
    if s is None:
        choice, s_min, s_max = x.choice, least_moduli(k), MAX_MODULI
    else:
        choice, s_min, s_max = fixed_choice(k, s, bits), s, s
    ra = residues(x.a, x.a_stats, choice, s_max, specs.RESIDUE_TILE_M, stream)
    rb = residues(x.bt, x.b_stats, choice, s_max, specs.RESIDUE_TILE_N, stream)
    q = products(ra, rb, choice, m, n, k, s_max, s_min, stream)
    direct = fallback_product(x.a, x.b, choice, x.a_stats, x.b_stats, stream)
    return reconstruct(q, x.a_stats, x.b_stats, choice, direct, n, stream)


def int8_ops(m: int, n: int, k: int, s: int) -> float:
    """INT8 multiply-adds x 2 of the products, as the padded tiles do them."""
    tm, tn = specs.RESIDUE_TILE_M, specs.RESIDUE_TILE_N
    return 2.0 * s * math.ceil(m / tm) * tm * math.ceil(n / tn) * tn * max(1, math.ceil(k / K_TILE)) * K_TILE
