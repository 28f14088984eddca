"""The INT8 moduli and their CRT constants, checked with Python integers."""

import math

import pytest

from mlx_sgemm.emulation import moduli


def test_moduli_are_gemmul8s_greedy_table():
    """256, then each odd number downward that is coprime to all kept before it."""
    kept = [256]
    n = 255
    while len(kept) < len(moduli.MODULI):
        if all(math.gcd(n, p) == 1 for p in kept):
            kept.append(n)
        n -= 2
    assert tuple(kept) == moduli.MODULI
    assert all(p <= 256 for p in moduli.MODULI)


@pytest.mark.parametrize("s", range(1, len(moduli.MODULI) + 1))
def test_crt_constants(s):
    c = moduli.crt(s)
    assert c.count == s and c.product == math.prod(moduli.MODULI[:s])
    for p, m, inv, w in zip(c.moduli, c.partial, c.inverses, c.weights):
        assert m * p == c.product
        assert m * inv % p == 1
        # w_i is 1 modulo p_i and 0 modulo every other modulus.
        assert all(w % q == (1 if q == p else 0) for q in c.moduli)
    # The float64 splits: hi exact multiples of 2^shift, hi + lo the weight
    # (lo rounded to float64), and sum_i hi_i q_i exact for |q_i| <= 128.
    for w, hi, lo in zip(c.weights, c.weights_hi, c.weights_lo):
        assert int(hi) % 2**c.shift == 0 and int(hi) <= w
        assert abs(int(hi) + int(lo) - w) <= max(1, 2 ** (c.shift - 53))
        assert int(hi) * 128 * s < 2**53 * 2**c.shift
    assert int(c.product_hi) + int(c.product_lo) == c.product or c.shift > 53


@pytest.mark.parametrize("s", [1, 2, 6, 8, 12, 20])
def test_float64_reconstruction_recovers_every_extreme(s):
    """The GPU's float64 CRT (scheme.reconstruct) against Python ints at the
    ends of the range the scaling guarantees and at random values. (The
    scaling leaves |C'| <= K (2^b - 1)^2 <= P/2 - K (2^(b+1) - 1): at least
    2^-(b+1) P short of P/2, where round(X / P) in float64 cannot err.)"""
    import numpy as np

    from mlx_sgemm.emulation import scheme

    c = moduli.crt(s)
    rng = np.random.default_rng(s)
    half = c.product // 2 - max(1, c.product >> 40)
    values = [0, 1, -1, half, -half, half // 3, -half // 7] + [
        int(rng.integers(-2**62, 2**62)) * half // 2**62 for _ in range(50)]
    products = np.array([[[v % p - (p if v % p > p // 2 else 0) for v in values]] for p in c.moduli],
                        dtype=np.int64)
    exact = scheme.reconstruct_exact(products)[0]
    assert list(exact) == values
    got = scheme.reconstruct(products)[0]
    # Relative to P: what the float64 path promises (a few units of 2^-52 P).
    assert np.all(np.abs(got - np.array(values, dtype=np.float64)) <= c.product * 2.0**-50)


@pytest.mark.parametrize("k", [1, 31, 4096, 65536])
def test_moduli_for_keeps_the_bits_and_no_more_moduli_than_needed(k):
    for bits in (8, 16, 24, 32):
        s = moduli.moduli_for(k, bits)
        assert 2 ** (2 * bits + 1) <= moduli.crt(s).product
        assert s == 1 or 2 ** (2 * bits + 1) > moduli.crt(s - 1).product
        assert moduli.bits_for(k, s) >= bits


def test_norm_bits_per_moduli_count():
    """A scaled line's 2-norm bound: 27 bits with 7 moduli, 31 with 8, whatever K
    (Cauchy-Schwarz bounds |C'| by the norms, not by K)."""
    assert [moduli.bits_for(k, 7) for k in (1, 31, 4096, 65536)] == [27] * 4
    assert [moduli.bits_for(4096, s) for s in (6, 7, 8, 9)] == [23, 27, 31, 35]
    assert moduli.moduli_for(4096, 27) == 7 and moduli.moduli_for(4096, 28) == 8


def test_past_the_int32_bound_k_must_be_split():
    assert moduli.INT32_EXACT_K * 128**2 < 2**31 <= (moduli.INT32_EXACT_K + 1) * 128**2
    moduli.moduli_for(moduli.INT32_EXACT_K, 24)
    with pytest.raises(ValueError, match="k=131072.*split K"):
        moduli.moduli_for(moduli.INT32_EXACT_K + 1, 24)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="bits"):
        moduli.moduli_for(16, 0)
    with pytest.raises(ValueError, match="bits=90"):
        moduli.moduli_for(16, 90)
    with pytest.raises(ValueError, match="s must be"):
        moduli.crt(0)
    with pytest.raises(ValueError, match="k must be"):
        moduli.bits_for(0, 4)
