"""The Ozaki scheme II product in numpy: the reference the tests check and the
specification of the GPU path, step by step.

1. :func:`assess` (the pre-pass): are the operands finite, how far below each
   row's (column's) 2-norm bound its typical entry lies, how wide its
   exponent range is; from that, the bits a side and the number of moduli, or
   why the product should go to another kernel instead.
2. :func:`scale`: per-row powers of two for A, per-column for B, so that
   A' = trunc(A * 2^e_i) and B' = trunc(B * 2^f_j) are integer lines of 2-norm
   at most 2^bits.
3. :func:`residues`: A' and B' modulo each p_i, symmetric, as int8.
4. :func:`residue_products`: the s products of residues, int64 matmuls that
   stand for the INT8 GEMM with int32 accumulation (checked to fit int32).
5. :func:`reconstruct`: each product reduced mod p_i, the CRT in float64 with
   the hi/lo constants of :class:`~mlx_sgemm.emulation.moduli.CRT` (what the
   GPU computes), or exactly with Python ints (:func:`reconstruct_exact`).
6. :func:`unscale`: C = C' * 2^-(e_i + f_j), rounded to float32.

:func:`emulate` runs them all. Operands are 2-D (M x K, K x N).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from . import moduli as _moduli


def default_target_bits(k: int) -> int:
    """Bits of each line's typical entry to keep (scheme.decide adds how far
    below its line's 2-norm bound that entry lies) so that the normwise error
    stays below float32 SGEMM's, which the contract asks to match. float32's
    error grows with K (a sum of K roundings), the scheme's does not (one
    truncation an entry): round(23 - log2(K) / 3), so 23 at K = 1, 21 at K =
    31, 19 at K = 4096 and 8192. Measured against float64 on normal inputs
    (numpy reference): 7 moduli at K = 4096 / 8192 1.6e-8 / 1.5e-8 against
    cuBLAS SGEMM's 2.8e-8 (H100); GEMMul8's hard inputs, which take more
    moduli, are in the GPU tests (docs/performance-log.md, "INT8 emulation
    on Hopper")."""
    return round(23 - math.log2(max(k, 1)) / 3)


@dataclass(frozen=True)
class Assessment:
    """What the pre-pass found and decided.

    ``reason`` is None when the product can be emulated with ``moduli`` moduli
    keeping ``bits`` bits a side; otherwise it says why the product goes to
    the fallback (non-finite entries, K past the int32 bound, a range no
    moduli count of the table can carry). ``a_lost_bits`` / ``b_lost_bits``:
    how far (in bits) the worst row's (column's) mean magnitude lies below its
    largest entry; ``a_span`` / ``b_span``: the widest exponent range of the
    nonzero entries of a row (column). ``wide`` names the operand and
    row/column whose range is wider than the bits its mass needs: scaled to
    those bits, some of its nonzero entries would vanish, so moduli were added
    to keep them (or, past the table, the reason says so).
    """

    k: int
    bits: int
    moduli: int | None
    a_lost_bits: int
    b_lost_bits: int
    a_span: int
    b_span: int
    wide: str | None
    reason: str | None

    @property
    def emulate(self) -> bool:
        return self.reason is None


# The scaling's margin on a line's 2-norm, so that a norm summed in another
# order (the GPU's) or rounded low still bounds the line: 2^-20 relative.
NORM_MARGIN = 1.0 + 2.0**-20


def ceil_log2(y: np.ndarray) -> np.ndarray:
    """ceil(log2(y)) of positive float64 values, exactly (frexp: y = m 2^e, m
    in [0.5, 1))."""
    m, e = np.frexp(y)
    return np.where(m == 0.5, e - 1, e).astype(np.int64)


def line_extremes(x: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """For each row (axis=1) or column (axis=0) of x, in float64: its largest
    magnitude, the sum of its magnitudes, its smallest nonzero magnitude (inf
    for an all-zero line), and its norm exponent ceil(log2(||x||_2 *
    NORM_MARGIN)) (0 for an all-zero line). The GPU path reads the same four
    with one kernel (kernels/cuda/int8_line_stats.cu)."""
    x64 = x.astype(np.float64)
    mag = np.abs(x64)
    norm = np.sqrt((x64 * x64).sum(axis=axis)) * NORM_MARGIN
    norm_exp = np.where(norm > 0, ceil_log2(np.where(norm > 0, norm, 1.0)), 0)
    return (mag.max(axis=axis), mag.sum(axis=axis), np.where(mag > 0, mag, np.inf).min(axis=axis),
            norm_exp.astype(np.float64))


def line_exponents(top_val: np.ndarray, total: np.ndarray, low_val: np.ndarray, norm_exp: np.ndarray,
                   k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From :func:`line_extremes`: each line's norm exponent n, its lost bits
    (how far below its norm bound its typical entry lies: n - floor(log2(sum
    |x| / K)), exactly, by frexp) and its span (n - floor(log2) of its
    smallest nonzero magnitude: the bits that entry needs to stay nonzero).
    Both are 0 for a line of zeros and for a line holding an Inf or NaN (its
    outputs are computed in float32, whatever the scaling)."""
    top_val, total, low_val, norm_exp = (np.asarray(v, np.float64) for v in (top_val, total, low_val, norm_exp))
    zero = ~(top_val > 0) | ~np.isfinite(top_val)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        mean_exp = np.frexp(np.where(zero | ~(total > 0), 1.0, total / k))[1] - 1
        low_exp = np.frexp(np.where(zero | ~np.isfinite(low_val), 1.0, low_val))[1] - 1
    lost = np.where(zero | ~(total > 0), 0, norm_exp - mean_exp)
    span = np.where(zero | ~np.isfinite(low_val), 0, norm_exp - low_exp)
    return norm_exp.astype(np.int64), np.maximum(lost, 0).astype(np.int64), np.maximum(span, 0).astype(np.int64)


def exponents(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`line_exponents` of x's rows (axis=1) or columns (axis=0)."""
    return line_exponents(*line_extremes(x, axis), x.shape[axis])


def assess(a: np.ndarray, b: np.ndarray, target_bits: int | None = None,
           max_moduli: int = len(_moduli.MODULI)) -> Assessment:
    """The pre-pass: read each row's and column's exponent range and choose
    the bits a side and the moduli, or say why the product should fall back.

    Bits a side = target_bits + the worst lost bits of either operand (a row
    whose mass lies far below its largest entry needs more bits for its
    typical entries to keep ``target_bits``), raised to span + 1 when a row's
    (column's) exponent span is wider still, so that no nonzero entry scales
    to zero. Then :func:`~mlx_sgemm.emulation.moduli.moduli_for`.
    """
    k = a.shape[1]
    if b.shape[0] != k:
        raise ValueError(f"a is {a.shape} and b is {b.shape}: inner dimensions differ")
    for name, x in (("a", a), ("b", b)):
        if not np.isfinite(x).all():
            return Assessment(k=k, bits=0, moduli=None, a_lost_bits=0, b_lost_bits=0, a_span=0,
                              b_span=0, wide=None, reason=f"{name} holds inf or NaN")
    return decide(k, exponents(a, 1), exponents(b, 0), target_bits, max_moduli)


class Reason(enum.IntEnum):
    """Why :func:`decide` does not emulate a product, as a code (the device's
    choice, kernels/cuda/int8_choice.cu, writes it)."""

    NONE = 0
    TOO_MANY_BITS = 1  # more bits a side than the path carries
    TOO_MANY_MODULI = 2  # more moduli than the path (or the table) has


def decide(k: int, a_lines, b_lines, target_bits: int | None = None,
           max_moduli: int = len(_moduli.MODULI), max_bits: int | None = None) -> Assessment:
    """:func:`assess`'s choice from each operand's :func:`line_exponents`
    (A's rows, B's columns). ``max_bits``: the most bits a side the caller can
    carry (the GPU path's residue steps); more is a reason to fall back. The
    GPU makes the same choice from the same statistics on the device
    (kernels/cuda/int8_choice.cu)."""
    if target_bits is None:
        target_bits = default_target_bits(k)
    if k > _moduli.INT32_EXACT_K:
        return Assessment(k=k, bits=0, moduli=None, a_lost_bits=0, b_lost_bits=0, a_span=0, b_span=0,
                          wide=None, reason=(
                              f"K={k} is past the int32-exactness bound of the INT8 products "
                              f"(K <= {_moduli.INT32_EXACT_K}); K must be split"))
    _, a_lost, a_span = a_lines
    _, b_lost, b_span = b_lines
    worst = lambda v: int(v.max()) if v.size else 0
    lost = (worst(a_lost), worst(b_lost))
    spans = (worst(a_span), worst(b_span))
    needed = target_bits + max(lost)
    wide_operand, wide_line = 0, -1
    for operand, span in ((1, a_span), (2, b_span)):  # B named when both are wide
        if span.size and span.max() + 1 > needed:
            wide_operand, wide_line = operand, int(span.argmax())
    bits, moduli, reason = max(needed, max(spans) + 1), 0, Reason.NONE
    if max_bits is not None and bits > max_bits:
        reason = Reason.TOO_MANY_BITS
    else:
        moduli = next((s for s in range(1, len(_moduli.MODULI) + 1) if _moduli.bits_for(max(k, 1), s) >= bits), 0)
        if moduli == 0 or moduli > max_moduli:
            moduli, reason = 0, Reason.TOO_MANY_MODULI
        else:  # Keep all the bits the moduli carry at this K: more accuracy, no cost.
            carried = _moduli.bits_for(max(k, 1), moduli)
            bits = max(bits, carried if max_bits is None else min(carried, max_bits))
    return assessment(k, moduli, bits, reason, lost, spans, wide_operand, wide_line, max_bits, max_moduli)


def assessment(k: int, moduli: int, bits: int, reason: int, lost: tuple[int, int], spans: tuple[int, int],
               wide_operand: int, wide_line: int, max_bits: int | None, max_moduli: int) -> Assessment:
    """The :class:`Assessment` of a choice given as numbers (:func:`decide`'s,
    or the device's words, mlx_sgemm.emulation.gpu.Operands.assessment), its reason in words."""
    wide = None
    if wide_operand:
        name, line = (("a", "row"), ("b", "column"))[wide_operand - 1]
        wide = f"{line} {wide_line} of {name} spans 2^{spans[wide_operand - 1]}"
    why = wide or f"the rows and columns need {bits} bits a side"
    text = {
        Reason.NONE: None,
        Reason.TOO_MANY_BITS: f"{why}: {bits} bits a side, more than the {max_bits} this path carries",
        Reason.TOO_MANY_MODULI: f"{why}: keeping {bits} bits a side at K={k} takes more than {max_moduli} moduli",
    }[Reason(reason)]
    return Assessment(k=k, bits=bits, moduli=moduli or None, a_lost_bits=lost[0], b_lost_bits=lost[1],
                      a_span=spans[0], b_span=spans[1], wide=wide, reason=text)


@dataclass(frozen=True)
class Scaled:
    """A' (M x K) and B' (K x N) as int64, and their shifts: A' = trunc(A * 2^e)."""

    a: np.ndarray
    b: np.ndarray
    e: np.ndarray  # per row of A
    f: np.ndarray  # per column of B


def line_shifts(norm_exp: np.ndarray, bits: int) -> np.ndarray:
    """The power of two that brings each line's 2-norm to at most 2^bits (a
    line of zeros: 0)."""
    return (bits - norm_exp).astype(np.int64)


def scale(a: np.ndarray, b: np.ndarray, bits: int) -> Scaled:
    """A' = trunc(A * 2^e_i) with ||A'_i||_2 <= 2^bits, B' = trunc(B * 2^f_j) likewise."""
    if bits > 62:
        raise ValueError(f"bits must be at most 62 (int64 scaled operands), got {bits}")
    e = line_shifts(line_extremes(a, 1)[3], bits)
    f = line_shifts(line_extremes(b, 0)[3], bits)
    a_int = np.trunc(np.ldexp(a.astype(np.float64), e[:, None])).astype(np.int64)
    b_int = np.trunc(np.ldexp(b.astype(np.float64), f[None, :])).astype(np.int64)
    return Scaled(a_int, b_int, e, f)


def symmetric_mod(x: np.ndarray, p: int) -> np.ndarray:
    """x mod p in [-(p//2), p - 1 - p//2]: [-128, 127] for 256, [-(p-1)/2, (p-1)/2] for odd p."""
    h = p // 2
    return np.mod(x + h, p) - h


def residues(x: np.ndarray, s: int) -> np.ndarray:
    """The residues of an integer matrix modulo the first s moduli, int8, stacked [s, ...]."""
    return np.stack([symmetric_mod(x, p) for p in _moduli.MODULI[:s]]).astype(np.int8)


def residue_products(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """The INT8 GEMMs: ra [s, M, K] @ rb [s, K, N], int32 results; raises
    where int32 accumulation would not have been exact."""
    k = ra.shape[-1]
    _moduli.check_k(k)
    products = np.matmul(ra.astype(np.int64), rb.astype(np.int64))
    assert np.abs(products).max(initial=0) < 2**31
    return products.astype(np.int32)


def reduce(products: np.ndarray) -> np.ndarray:
    """Each int32 product reduced modulo its own p_i, symmetric (int64)."""
    s = products.shape[0]
    return np.stack([symmetric_mod(products[i].astype(np.int64), p)
                     for i, p in enumerate(_moduli.MODULI[:s])])


def reconstruct(products: np.ndarray) -> np.ndarray:
    """C' from the s int32 residue products by the CRT in float64, as the GPU
    computes it: X = sum_i hi_i q_i (exact) + sum_i lo_i q_i, Q = round(X / P),
    C' = (X_hi - Q P_hi) + (X_lo - Q P_lo). Q is right when |C'| stays well short
    of P/2 (by far more than 2^-50 P), which the scaling guarantees: |C'| <=
    K (2^b - 1)^2 <= P/2 - K (2^(b+1) - 1)."""
    s = products.shape[0]
    c = _moduli.crt(s)
    q = reduce(products).astype(np.float64)
    x_hi = np.zeros(q.shape[1:])
    x_lo = np.zeros(q.shape[1:])
    for i in range(s):
        x_hi += c.weights_hi[i] * q[i]
        x_lo += c.weights_lo[i] * q[i]
    quotient = np.rint((x_hi + x_lo) * c.product_inverse)
    return (x_hi - quotient * c.product_hi) + (x_lo - quotient * c.product_lo)


def reconstruct_exact(products: np.ndarray) -> np.ndarray:
    """C' from the residue products by the CRT in Python integers (object array)."""
    s = products.shape[0]
    c = _moduli.crt(s)
    q = reduce(products).astype(object)
    x = sum(w * q[i] for i, w in enumerate(c.weights))
    x = np.mod(x + c.product // 2, c.product) - c.product // 2
    return x


def unscale(c_int: np.ndarray, e: np.ndarray, f: np.ndarray) -> np.ndarray:
    """C = C' * 2^-(e_i + f_j), in float64."""
    return np.ldexp(c_int.astype(np.float64), -(e[:, None] + f[None, :]))


def emulate(a: np.ndarray, b: np.ndarray, moduli: int | None = None, bits: int | None = None,
            ) -> tuple[np.ndarray, Assessment]:
    """A @ B by the scheme, in float32, and the pre-pass's assessment.

    ``moduli`` / ``bits`` override the pre-pass's choice (bits defaults to what
    ``moduli`` carries at this K). Raises ValueError when the pre-pass routes
    the product to the fallback and no override is given.
    """
    a, b = np.asarray(a), np.asarray(b)
    verdict = assess(a, b)
    k = a.shape[1]
    if moduli is None and bits is None:
        if not verdict.emulate:
            raise ValueError(f"not emulated: {verdict.reason}")
        moduli, bits = verdict.moduli, verdict.bits
    elif moduli is None:
        moduli = _moduli.moduli_for(max(k, 1), bits)
    elif bits is None:
        bits = _moduli.bits_for(max(k, 1), moduli)
    if bits < 1:
        raise ValueError(f"moduli={moduli} keeps no bits at K={k}")
    if k == 0:
        return np.zeros((a.shape[0], b.shape[1]), np.float32), verdict
    sc = scale(a, b, bits)
    products = residue_products(residues(sc.a, moduli), np.swapaxes(residues(sc.b.T, moduli), 1, 2))
    c = unscale(reconstruct(products), sc.e, sc.f)
    return c.astype(np.float32), verdict


def errors(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(normwise, componentwise) error of c against the float64 product:
    ||C - AB||_F / || |A||B| ||_F and max_ij |C - AB|_ij / (|A||B|)_ij."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    bound = np.abs(a64) @ np.abs(b64)
    diff = np.abs(c.astype(np.float64) - ref)
    normwise = float(np.linalg.norm(diff) / np.linalg.norm(bound))
    with np.errstate(divide="ignore", invalid="ignore"):
        comp = np.where(bound > 0, diff / bound, np.where(diff > 0, math.inf, 0.0))
    return normwise, float(comp.max(initial=0.0))
