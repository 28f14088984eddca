"""The INT8 emulation's modular products on a CUDA GPU: the s INT8 GEMMs of the
residues of A and B (kernels/cuda/int8_residue_gemm.cu), with the padding and
the ``params`` the kernel expects.

Residues come stacked by modulus, K-contiguous: A's as int8 [s, M, K], B's
transposed as int8 [s, N, K] (what :func:`mlx_sgemm.emulation.scheme.residues`
makes of A' and of B'^T). K is padded with zeros to a multiple of 64 bytes (a
k-tile; it also makes every row 16-byte aligned for cp.async); zeros add
nothing to the products.
"""

from __future__ import annotations

import mlx.core as mx

from ..build import registry, specs
from ..dispatch.problem import MAX_GRID_X
from . import moduli

K_TILE = 64  # bytes of K per k-tile (the kernel's BK)


def padded_k(k: int) -> int:
    return -(-k // K_TILE) * K_TILE


def pad_k(r: mx.array, stream=None) -> mx.array:
    """Residues [s, rows, K] with K padded by zeros to a multiple of K_TILE."""
    k = r.shape[-1]
    extra = padded_k(k) - k
    if extra == 0:
        return r
    return mx.pad(r, [(0, 0), (0, 0), (0, extra)], stream=stream)


def residue_products(ra: mx.array, rb_t: mx.array, stream=None,
                     spec: specs.KernelSpec | None = None) -> mx.array:
    """int32 [s, M, N]: ra [s, M, K] @ rb_t[s, N, K]^T for each modulus, on the
    INT8 tensor cores; exact while K <= moduli.INT32_EXACT_K (checked)."""
    if ra.dtype != mx.int8 or rb_t.dtype != mx.int8:
        raise TypeError(f"ra and rb_t must be int8 residues, got {ra.dtype} and {rb_t.dtype}")
    if ra.ndim != 3 or rb_t.ndim != 3 or ra.shape[0] != rb_t.shape[0] or ra.shape[2] != rb_t.shape[2]:
        raise ValueError(f"ra must be [s, M, K] and rb_t [s, N, K], got {ra.shape} and {rb_t.shape}")
    s, m, k = ra.shape
    n = rb_t.shape[1]
    moduli.check_k(k)
    spec = spec or specs.emulation_specs("cuda")[0]
    tiles_m, tiles_n = -(-m // spec.block_m), -(-n // spec.block_n)
    threads = spec.threadgroup[0]
    blocks = s * tiles_m * tiles_n
    if blocks * threads > MAX_GRID_X:
        raise ValueError(f"{s} moduli of a {m}x{n} product need {blocks} blocks, more than one "
                         f"launch can address ({MAX_GRID_X // threads})")
    if min(s, m, n) == 0:
        return mx.zeros((s, m, n), dtype=mx.int32, stream=stream)
    params = mx.array([m, n, padded_k(k), tiles_m, tiles_n], dtype=mx.int32)
    return registry.kernel(spec)(
        inputs=[mx.contiguous(pad_k(ra, stream), stream=stream),
                mx.contiguous(pad_k(rb_t, stream), stream=stream), params],
        output_shapes=[(s, m, n)],
        output_dtypes=[mx.int32],
        grid=(blocks * threads, 1, 1),
        threadgroup=spec.threadgroup,
        template=list(spec.template),
        stream=stream,
    )[0]
