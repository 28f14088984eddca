"""The INT8 moduli of the Ozaki scheme II emulation, their Chinese-remainder
constants, and how many of them a product needs.

The scheme (Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation
of floating-point matrix multiplication using an integer modular technique",
arXiv 2504.08009; GPU implementation: GEMMul8) multiplies integer matrices A'
(M x K) and B' (K x N) exactly by multiplying their residues modulo s pairwise
coprime moduli p_1..p_s on INT8 tensor cores, and recovers C' = A'B' from the s
residue products by the Chinese remainder theorem (CRT).

Why these bounds
----------------
* Residues fit int8. A residue is taken in the symmetric range: for an odd p,
  [-(p-1)/2, (p-1)/2] (within [-127, 127]); for p = 256, [-128, 127]. Every
  modulus is at most 256.
* The INT8 products are exact. Each product of two residues is at most
  128 * 128 = 2^14 in magnitude, so a sum of K of them fits int32 while
  K * 2^14 <= 2^31 - 1, i.e. K <= INT32_EXACT_K = 131071. A longer K must be
  split into stretches of at most that length (or the product falls back).
* The CRT recovers C'. Residues modulo p_1..p_s determine an integer modulo
  P = p_1 * ... * p_s; read in the symmetric range (-P/2, P/2) they give C'
  itself when |C'_ij| < P/2. Each row of A' and column of B' is scaled so that
  its 2-norm is at most 2^t (GEMMul8 bounds C' by the lines' norms too); then
  |C'_ij| <= ||A'_i|| ||B'_j|| <= 2^(2t) by Cauchy-Schwarz, and 2^(2t+1) <= P
  suffices, whatever K. :func:`bits_for` gives the largest such t for s
  moduli, :func:`moduli_for` the least s for a t. (A bound by the largest
  entries, K 2^(2t), would give up log2(K) / 2 bits a side.)
* Bits kept. An entry x of a line of 2-norm ||x|| keeps about
  t - log2(||x|| / |x|) significant bits: a line's typical entry about
  t - log2(sqrt(K) rms / mean); mlx_sgemm.emulation.scheme's pre-pass counts
  them.

The moduli
----------
GEMMul8's table: 256, then the odd numbers downward, each kept when it is
coprime to every number kept before it (255 = 3 * 5 * 17, 253 = 11 * 23,
247 = 13 * 19, 217 = 7 * 31, the rest prime). Larger moduli first, so the
first s have the largest product.

Reconstruction in float64 (the GPU path)
----------------------------------------
With q_i = (A'B') mod p_i in the symmetric range and w_i = (P/p_i) *
((P/p_i)^-1 mod p_i) mod P, X = sum_i w_i q_i is congruent to C' modulo P, and
C' = X - P * round(X / P). X reaches s * 128 * P, far past float64's 53 bits,
so each w_i is split as w_i = hi_i + lo_i, hi_i a multiple of 2^shift with at
most 53 - 7 - ceil(log2 s) significant bits: then sum_i hi_i q_i is exact in
float64, and sum_i lo_i q_i (small) is accurate. P is split the same way so
that round(X / P) * P_hi is exact too. :class:`CRT` holds these constants.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

# GEMMul8's moduli (see the docstring for the rule that makes them).
MODULI = (256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191,
          181, 179, 173)

# The longest K whose int32 sums of int8 residue products are exact.
RESIDUE_BOUND = 128
INT32_EXACT_K = (2**31 - 1) // RESIDUE_BOUND**2


@dataclass(frozen=True)
class CRT:
    """The Chinese-remainder constants for the first ``s`` moduli."""

    moduli: tuple[int, ...]
    product: int  # P
    partial: tuple[int, ...]  # P / p_i
    inverses: tuple[int, ...]  # (P / p_i)^-1 mod p_i
    weights: tuple[int, ...]  # w_i = (P / p_i) * inverse_i mod P
    shift: int  # hi parts are multiples of 2^shift
    weights_hi: tuple[float, ...]
    weights_lo: tuple[float, ...]
    product_hi: float
    product_lo: float
    product_inverse: float  # 1 / P rounded to float64: the quotient X / P as a product


    @property
    def count(self) -> int:
        return len(self.moduli)


def _split(value: int, shift: int) -> tuple[float, float]:
    """``value`` as hi + lo, hi a multiple of 2^shift (exact in float64 by
    choice of shift), lo the rest rounded to float64."""
    hi = (value >> shift) << shift
    return float(hi), float(value - hi)


@functools.cache
def crt(s: int) -> CRT:
    """The CRT constants for the first ``s`` moduli of :data:`MODULI`."""
    if not 1 <= s <= len(MODULI):
        raise ValueError(f"s must be 1..{len(MODULI)} moduli, got {s}")
    moduli = MODULI[:s]
    product = math.prod(moduli)
    partial = tuple(product // p for p in moduli)
    inverses = tuple(pow(m % p, -1, p) for m, p in zip(partial, moduli))
    weights = tuple(m * v % product for m, v in zip(partial, inverses))
    # sum_i hi_i q_i with |q_i| <= 128 must stay below 2^53 in units of 2^shift.
    headroom = 53 - 7 - math.ceil(math.log2(s)) if s > 1 else 46
    shift = max(0, product.bit_length() - headroom)
    his, los = zip(*(_split(w, shift) for w in weights))
    product_hi, product_lo = _split(product, shift)
    return CRT(moduli, product, partial, inverses, weights, shift, his, los, product_hi, product_lo,
               1.0 / float(product))


def check_k(k: int) -> None:
    """Raise when int32 sums of K int8 products are not exact."""
    if k > INT32_EXACT_K:
        raise ValueError(
            f"k={k} is past the int32-exactness bound of the INT8 products "
            f"(K * 128^2 < 2^31: K <= {INT32_EXACT_K}); split K into stretches of at most "
            f"{INT32_EXACT_K}")


def bits_for(k: int, s: int) -> int:
    """The 2-norm bound, in bits, that each scaled row of A and column of B
    may have with ``s`` moduli: the largest t with 2^(2t+1) <= P. ``k`` is
    checked against the int32 bound (the bound itself does not depend on it)."""
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    check_k(k)
    return (crt(s).product.bit_length() - 2) // 2


def moduli_for(k: int, bits: int) -> int:
    """How many moduli allow scaled lines of 2-norm up to 2^bits (the least s
    with 2^(2 bits + 1) <= P). Raises when K is past the int32 bound (split K)
    or no s in the table suffices."""
    if bits < 1:
        raise ValueError(f"bits must be positive, got {bits}")
    for s in range(1, len(MODULI) + 1):
        if bits_for(k, s) >= bits:
            return s
    raise ValueError(
        f"bits={bits} at k={k} needs more than the {len(MODULI)} moduli of the table")
