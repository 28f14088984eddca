"""How mlx_sgemm.emulation.residue_gemm calls the INT8 kernel (no GPU): K
padded with zeros to whole 64-byte k-tiles, params, grid and output, checked
with a stand-in for the kernel that multiplies what it is handed."""

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.build import registry
from mlx_sgemm.emulation import moduli, residue_gemm


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def kernel(spec):
        def run(inputs, output_shapes, output_dtypes, grid, threadgroup, template, stream):
            ra, rb_t, params = (np.array(x) for x in inputs)
            seen.append(dict(params=list(params), grid=grid, threadgroup=threadgroup,
                             k=ra.shape[-1], template=template))
            assert output_dtypes == [mx.int32] and ra.dtype == np.int8
            out = np.matmul(ra.astype(np.int64), np.swapaxes(rb_t, 1, 2).astype(np.int64))
            assert list(out.shape) == list(output_shapes[0])
            return [mx.array(out.astype(np.int32))]
        return run

    monkeypatch.setattr(registry, "kernel", kernel)
    return seen


def test_the_call(calls):
    rng = np.random.default_rng(0)
    s, m, n, k = 3, 130, 257, 100
    ra = rng.integers(-128, 128, (s, m, k), dtype=np.int8)
    rb_t = rng.integers(-128, 128, (s, n, k), dtype=np.int8)
    out = np.array(residue_gemm.residue_products(mx.array(ra), mx.array(rb_t)))
    assert np.array_equal(out, np.matmul(ra.astype(np.int64), np.swapaxes(rb_t, 1, 2).astype(np.int64)))
    (call,) = calls
    assert call["k"] == 128  # 100 padded to two k-tiles
    assert call["params"] == [m, n, 128, 2, 3]
    assert call["grid"] == (s * 2 * 3 * 256, 1, 1) and call["threadgroup"] == (256, 1, 1)


def test_k_already_whole_is_not_copied():
    r = mx.zeros((2, 3, 128), dtype=mx.int8)
    assert residue_gemm.pad_k(r) is r


def test_bad_arguments_are_named(calls):
    a = mx.zeros((2, 4, 8), dtype=mx.int8)
    with pytest.raises(TypeError, match="ra and rb_t"):
        residue_gemm.residue_products(a.astype(mx.int32), a)
    with pytest.raises(ValueError, match="rb_t"):
        residue_gemm.residue_products(a, mx.zeros((3, 4, 8), dtype=mx.int8))
    k = moduli.INT32_EXACT_K + 1
    with pytest.raises(ValueError, match="split K"):
        residue_gemm.residue_products(mx.zeros((1, 1, k), dtype=mx.int8), mx.zeros((1, 1, k), dtype=mx.int8))
    assert not calls
