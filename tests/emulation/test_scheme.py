"""The numpy reference of Ozaki scheme II against float64: normal inputs,
GEMMul8's hard inputs, wide rows, non-finite entries, K up to and past the
int32 bound. The float32 baseline is numpy's float32 matmul (a BLAS SGEMM),
more accurate than the GPU's cuBLAS SGEMM that the contract names (normal
inputs, K = 4096: 9.5e-9 against 2.8e-8 measured on an H100, 3x): the
reference is held to 3x numpy's error or 2e-8, whichever is larger;
tests/gpu holds the GPU path to cuBLAS's on the same inputs."""

CUBLAS_LEVEL = 2e-8
CUBLAS_OVER_NUMPY = 3

import numpy as np
import pytest

from mlx_sgemm.emulation import moduli, scheme


def normal(rng, m, k, n):
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def hard(rng, m, k, n, phi):
    """GEMMul8's test matrices: (rand - 0.5) * exp(phi * randn)."""
    make = lambda shape: ((rng.random(shape) - 0.5) * np.exp(phi * rng.standard_normal(shape)))  # noqa: E731
    return make((m, k)).astype(np.float32), make((k, n)).astype(np.float32)


def sgemm_errors(a, b):
    return scheme.errors(a @ b, a, b)


@pytest.mark.parametrize("k", [31, 4096])
def test_normal_inputs_match_float32(k):
    rng = np.random.default_rng(k)
    a, b = normal(rng, 48, k, 40)
    c, verdict = scheme.emulate(a, b)
    assert verdict.emulate and verdict.moduli == 7
    normwise, componentwise = scheme.errors(c, a, b)
    f32_normwise, f32_componentwise = sgemm_errors(a, b)
    assert normwise <= max(CUBLAS_OVER_NUMPY * f32_normwise, CUBLAS_LEVEL) and componentwise <= 4 * f32_componentwise


@pytest.mark.parametrize("k", [31, 4096])
def test_moduli_set_the_accuracy(k):
    """7 moduli (2-norms of 2^27) reach float32's normwise error; two fewer do not."""
    rng = np.random.default_rng(k + 1)
    a, b = normal(rng, 32, k, 32)
    s = moduli.moduli_for(k, 27)
    good = scheme.errors(scheme.emulate(a, b, moduli=s)[0], a, b)[0]
    poor = scheme.errors(scheme.emulate(a, b, moduli=s - 2)[0], a, b)[0]
    assert 1e-9 < good < 1e-7
    assert poor > 10 * good


def test_integer_inputs_are_exact():
    """Integers within the bits kept come through unrounded: the CRT recovers A'B' exactly."""
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, (20, 300)).astype(np.float32)
    b = rng.integers(-1000, 1000, (300, 24)).astype(np.float32)
    c, _ = scheme.emulate(a, b, moduli=6)
    assert np.array_equal(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("phi", [0.5, 1, 2, 4])
def test_hard_inputs_beat_float32(phi):
    rng = np.random.default_rng(int(phi * 10))
    a, b = hard(rng, 32, 4096, 32, phi)
    c, verdict = scheme.emulate(a, b)
    normwise, componentwise = scheme.errors(c, a, b)
    f32_normwise, f32_componentwise = sgemm_errors(a, b)
    assert normwise <= max(CUBLAS_OVER_NUMPY * f32_normwise, CUBLAS_LEVEL)
    # Wider ranges cost moduli: the pre-pass adds them.
    assert verdict.moduli >= 7


def test_prepass_flags_the_wide_hard_inputs():
    rng = np.random.default_rng(7)
    narrow = scheme.assess(*hard(rng, 32, 4096, 32, 0.5))
    wide = scheme.assess(*hard(rng, 32, 4096, 32, 4))
    assert wide.wide is not None and "spans" in wide.wide
    assert wide.bits > narrow.bits and wide.moduli > narrow.moduli


@pytest.mark.parametrize("operand", ["a", "b"])
def test_huge_next_to_tiny_is_flagged_and_falls_back(operand):
    """A row of A (column of B) holding 1e30 next to 1e-30: scaling to the
    1e30 would flush the 1e-30s, and no moduli count keeps 200 bits."""
    rng = np.random.default_rng(8)
    a, b = normal(rng, 16, 64, 16)
    if operand == "a":
        a[5, :] = 1e-30
        a[5, 3] = 1e30
    else:
        b[:, 9] = 1e-30
        b[3, 9] = 1e30
    verdict = scheme.assess(a, b)
    assert not verdict.emulate
    assert verdict.wide == (f"row 5 of a spans 2^{verdict.a_span}" if operand == "a"
                            else f"column 9 of b spans 2^{verdict.b_span}")
    assert "moduli" in verdict.reason and verdict.wide in verdict.reason
    with pytest.raises(ValueError, match="not emulated"):
        scheme.emulate(a, b)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_inputs_are_routed_to_the_fallback(value):
    rng = np.random.default_rng(9)
    a, b = normal(rng, 8, 16, 8)
    b[2, 3] = value
    verdict = scheme.assess(a, b)
    assert verdict.reason == "b holds inf or NaN" and verdict.moduli is None


def test_k_65536():
    rng = np.random.default_rng(10)
    a, b = normal(rng, 4, 65536, 4)
    c, verdict = scheme.emulate(a, b)
    assert verdict.moduli == moduli.moduli_for(65536, verdict.bits)
    assert scheme.errors(c, a, b)[0] <= sgemm_errors(a, b)[0]


def test_k_1_and_zero_rows():
    a = np.array([[3.0], [0.0], [-1e-20]], np.float32)
    b = np.array([[2.0, -0.5, 0.0]], np.float32)
    c, verdict = scheme.emulate(a, b)
    assert verdict.emulate
    assert np.array_equal(c, a @ b)


def test_past_the_int32_bound_the_prepass_says_split():
    k = moduli.INT32_EXACT_K + 1
    a = np.ones((1, k), np.float32)
    verdict = scheme.assess(a, a.T)
    assert not verdict.emulate and "K must be split" in verdict.reason
    with pytest.raises(ValueError, match="split K"):
        scheme.residue_products(np.ones((1, 1, k), np.int8), np.ones((1, k, 1), np.int8))


def test_the_int32_bound_is_tight():
    """At K = INT32_EXACT_K every residue product -128 * -128 sums to just under 2^31."""
    k = moduli.INT32_EXACT_K
    r = np.full((1, 1, k), -128, np.int8)
    assert scheme.residue_products(r, np.swapaxes(r, 1, 2))[0, 0, 0] == k * 128**2


def test_scaling_and_residues():
    rng = np.random.default_rng(11)
    a, b = hard(rng, 8, 64, 8, 2)
    bits = 20
    sc = scheme.scale(a, b, bits)
    for x, axis in ((sc.a, 1), (sc.b, 0)):
        norm = np.sqrt((x.astype(np.float64) ** 2).sum(axis=axis))
        assert np.all(norm <= 2**bits) and np.all(norm >= 2 ** (bits - 2))
    # trunc: |A'| <= |A| 2^e, less than one unit below it.
    exact = np.ldexp(a.astype(np.float64), sc.e[:, None])
    assert np.all(np.abs(sc.a) <= np.abs(exact)) and np.all(np.abs(exact - sc.a) < 1)
    r = scheme.residues(sc.a, 8)
    assert r.dtype == np.int8
    for i, p in enumerate(moduli.MODULI[:8]):
        assert np.all((r[i].astype(np.int64) - sc.a) % p == 0)
        assert r[i].min() >= -(p // 2) and r[i].max() <= (p - 1) // 2


def test_float64_reconstruction_matches_python_ints():
    rng = np.random.default_rng(12)
    a, b = normal(rng, 8, 512, 8)
    s = 9
    sc = scheme.scale(a, b, moduli.bits_for(512, s))
    products = scheme.residue_products(scheme.residues(sc.a, s),
                                       np.swapaxes(scheme.residues(sc.b.T, s), 1, 2))
    exact = scheme.reconstruct_exact(products)
    assert np.array_equal(exact.astype(np.float64), (sc.a.astype(object) @ sc.b.astype(object)).astype(np.float64))
    got = scheme.reconstruct(products)
    assert np.all(np.abs(got - exact.astype(np.float64)) <= moduli.crt(s).product * 2.0**-50)
