"""The INT8 emulation's modular products (kernels/cuda/int8_residue_gemm.cu)
against numpy's exact integer products, on a CUDA GPU: edge tiles in M and N,
K not a multiple of the k-tile, several moduli, and the int32 bound."""

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.emulation import moduli, residue_gemm, scheme

from ..conftest import GPU_BACKEND, requires_gpu

pytestmark = [
    requires_gpu,
    pytest.mark.gpu,
    pytest.mark.skipif(GPU_BACKEND != "cuda", reason="INT8 mma.sync is a CUDA kernel"),
]


def exact(ra, rb_t):
    return np.matmul(ra.astype(np.int64), np.swapaxes(rb_t, 1, 2).astype(np.int64))


@pytest.mark.parametrize("s, m, n, k", [
    (1, 1, 1, 1), (2, 16, 8, 32), (3, 130, 129, 64), (4, 257, 300, 100),
    (8, 128, 128, 4096), (1, 1000, 24, 31), (9, 64, 640, 2000),
])
def test_residue_products_are_exact(s, m, n, k):
    rng = np.random.default_rng(s * m + n + k)
    ra = rng.integers(-128, 128, (s, m, k), dtype=np.int8)
    rb_t = rng.integers(-128, 128, (s, n, k), dtype=np.int8)
    got = residue_products_np(ra, rb_t)
    assert got.dtype == np.int32
    assert np.array_equal(got, exact(ra, rb_t))


def residue_products_np(ra, rb_t):
    out = residue_gemm.residue_products(mx.array(ra), mx.array(rb_t))
    mx.eval(out)
    return np.array(out)


def test_the_int32_bound():
    """K = INT32_EXACT_K of -128 * -128: the largest sum the kernel must hold."""
    k = moduli.INT32_EXACT_K
    ra = np.full((1, 3, k), -128, np.int8)
    got = residue_products_np(ra, ra)
    assert np.all(got == k * 128**2)


def test_the_scheme_on_the_gpu_products():
    """The reference's scaling and residues, the kernel's products, the
    reference's CRT: the float32 result of scheme.emulate, bit for bit."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((70, 1000)).astype(np.float32)
    b = rng.standard_normal((1000, 90)).astype(np.float32)
    s = moduli.moduli_for(1000, 24)
    sc = scheme.scale(a, b, moduli.bits_for(1000, s))
    products = residue_products_np(scheme.residues(sc.a, s), scheme.residues(sc.b.T, s))
    c = scheme.unscale(scheme.reconstruct(products), sc.e, sc.f).astype(np.float32)
    assert np.array_equal(c, scheme.emulate(a, b, moduli=s)[0])
