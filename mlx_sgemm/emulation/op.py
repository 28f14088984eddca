"""``int8_emulated``: chapter 6 of the journey, a float32-accurate ``a @ b`` on
INT8 tensor cores by Ozaki scheme II (Ozaki, Uchino, Imamura, arXiv
2504.08009; GEMMul8), and :func:`assess`, which says what it will do.

How many moduli: by default a pre-pass reads each row of A's and column of B's
largest, total and smallest magnitudes (MLX reductions, read back to the host:
the one synchronization of the op) and keeps 24 significant bits of every line
plus the bits its mass lies below its largest entry
(:func:`mlx_sgemm.emulation.scheme.decide`); a line whose nonzero entries span
more than that gets the bits to keep them all, and the moduli follow
(:func:`mlx_sgemm.emulation.moduli.moduli_for`). Where that is more than the
path carries, K is past the int32 bound, or the GPU cannot run it, the product
goes to ``matmul`` (3xTF32, float32-accurate) instead, and :func:`assess`
says why. ``moduli=s`` skips the pre-pass (no synchronization) and uses s
moduli with the bits they carry at this K.

Rows of A and columns of B that hold Inf or NaN do not stop the emulation:
the outputs they touch are computed in float32, so Inf and NaN land where
``mx.matmul`` puts them.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from ..dispatch import device
from ..dispatch.problem import OPERAND_DTYPES, check_operand, plan
from . import gpu, scheme
from . import moduli as _moduli


def _path(stream) -> str:
    backend = device.backend(stream)
    if backend == "cuda":
        return "wgmma" if device.has_wgmma() else "fallback"
    return "numpy" if backend == device.CPU_FALLBACK else "fallback"


def _decide(a: mx.array, b: mx.array, moduli: int | None, stream) -> scheme.Assessment:
    """The emulation's choice for one 2-D float32 product."""
    k = a.shape[1]
    if moduli is not None:
        if not 1 <= moduli <= len(_moduli.MODULI):
            raise ValueError(f"moduli must be 1..{len(_moduli.MODULI)}, got {moduli}")
        if k > _moduli.INT32_EXACT_K:
            return scheme.decide(k, (np.zeros(0),) * 3, (np.zeros(0),) * 3)
        bits = _moduli.bits_for(max(k, 1), moduli)
        reason = None if bits >= 1 else f"{moduli} moduli keep no bits at K={k}"
        return scheme.Assessment(k=k, bits=bits, moduli=moduli if reason is None else None,
                                 a_lost_bits=0, b_lost_bits=0, a_span=0, b_span=0, wide=None, reason=reason)
    a_lines, _ = gpu.extremes_to_numpy(a, stream)
    b_lines, _ = gpu.extremes_to_numpy(mx.contiguous(b.T, stream=stream), stream)
    return scheme.decide(k, a_lines, b_lines, max_bits=gpu.MAX_BITS)


def _as_2d_products(a: mx.array, b: mx.array, stream):
    """The 2-D float32 products of a @ b with mx.matmul's semantics (1-D
    operands, broadcast batch), and how to put their results back."""
    check_operand(a, "a", OPERAND_DTYPES)
    check_operand(b, "b", OPERAND_DTYPES)
    p = plan(a.shape, b.shape)
    a32 = a.astype(mx.float32, stream=stream) if a.dtype != mx.float32 else a
    b32 = b.astype(mx.float32, stream=stream) if b.dtype != mx.float32 else b
    a2 = a32[None] if a.ndim == 1 else a32
    b2 = b32[:, None] if b.ndim == 1 else b32
    batch = p.batch_shape
    a3 = mx.broadcast_to(a2, (*batch, p.M, p.K), stream=stream).reshape(-1, p.M, p.K)
    b3 = mx.broadcast_to(b2, (*batch, p.K, p.N), stream=stream).reshape(-1, p.K, p.N)
    return p, a3, b3


def assess(a: mx.array, b: mx.array, moduli: int | None = None, *, stream=None) -> list[scheme.Assessment]:
    """What :func:`int8_emulated` decides for each 2-D product of ``a @ b``:
    the moduli and bits a side, or (``reason``) why it computes with
    ``matmul`` instead. Runs the pre-pass (a synchronization) unless
    ``moduli`` is given."""
    stream = device.canonical(stream)
    _, a3, b3 = _as_2d_products(a, b, stream)
    path = _path(stream)
    out = []
    for i in range(a3.shape[0]):
        verdict = _decide(a3[i], b3[i], moduli, stream)
        if verdict.reason is None and path == "fallback":
            verdict = scheme.Assessment(**{**verdict.__dict__, "moduli": None, "reason": (
                "the INT8 emulation runs on Hopper GPUs (wgmma) and on the CPU; this device has neither")})
        out.append(verdict)
    return out


def _numpy_product(a: mx.array, b: mx.array, verdict: scheme.Assessment) -> mx.array:
    """The CPU path: the numpy reference, with non-finite lines' outputs in float32."""
    an, bn = np.array(a), np.array(b)
    bad_rows, bad_cols = ~np.isfinite(an).all(axis=1), ~np.isfinite(bn).all(axis=0)
    clean_a, clean_b = np.where(bad_rows[:, None], 0, an), np.where(bad_cols[None, :], 0, bn)
    c, _ = scheme.emulate(clean_a, clean_b, moduli=verdict.moduli, bits=verdict.bits)
    if bad_rows.any() or bad_cols.any():
        with np.errstate(all="ignore"):
            direct = an @ bn
        c = np.where(bad_rows[:, None] | bad_cols[None, :], direct, c)
    return mx.array(c.astype(np.float32))


def int8_emulated(a: mx.array, b: mx.array, moduli: int | None = None, *, stream=None) -> mx.array:
    """``a @ b`` at float32 accuracy on INT8 tensor cores (Ozaki scheme II).

    Args:
        a, b: float32, float16 or bfloat16 arrays with ``mx.matmul``'s
            semantics (1-D operands, broadcast batch dimensions, any strides;
            the result has ``mx.matmul``'s dtype for them).
        moduli: how many INT8 moduli (1-20); None: chosen per product by the
            pre-pass (see :mod:`mlx_sgemm.emulation.op`).
        stream: stream or device.

    On a Hopper GPU: three kernels (residues, INT8 wgmma products reduced
    modulo each p_i, the CRT). On the CPU: the numpy reference of the same
    steps (the same result, bit for bit). Elsewhere, and where
    :func:`assess` gives a reason, ``matmul``. Not differentiable yet, and not
    inside ``mx.compile`` when ``moduli`` is None (the pre-pass reads back).
    """
    from ..ops import matmul  # the fallback: float32-accurate 3xTF32 on CUDA

    stream = device.canonical(stream)
    dtype = mx.result_type(a, b)
    p, a3, b3 = _as_2d_products(a, b, stream)
    path = _path(stream)
    results = []
    for i in range(a3.shape[0]):
        verdict = _decide(a3[i], b3[i], moduli, stream)
        if verdict.reason is not None or path == "fallback":
            results.append(matmul(a3[i], b3[i], stream=stream))
        elif path == "numpy":
            results.append(_numpy_product(a3[i], b3[i], verdict))
        else:
            results.append(gpu.emulated(a3[i], b3[i], verdict.moduli, verdict.bits, stream))
    c = mx.stack(results) if results else mx.zeros((0, p.M, p.N), dtype=mx.float32)
    return c.reshape(p.out_shape).astype(dtype, stream=stream)
