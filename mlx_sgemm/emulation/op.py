"""``int8_emulated``: chapter 7 of the journey, a float32-accurate ``a @ b`` on
INT8 tensor cores by Ozaki scheme II (Ozaki, Uchino, Imamura, arXiv
2504.08009; GEMMul8), and :func:`assess`, which says what it will do.

How many moduli: by default a pre-pass reads each row of A and column of B
(one kernel: largest, total and smallest magnitudes and the 2-norm) and asks
that every line's typical entry keep
:func:`~mlx_sgemm.emulation.scheme.default_target_bits` bits once the line is
scaled to its 2-norm bound, and that its smallest nonzero entry stay nonzero
(:func:`mlx_sgemm.emulation.scheme.decide`); the moduli follow
(:func:`mlx_sgemm.emulation.moduli.moduli_for`). On the GPU that choice is
made on the device (kernels/cuda/int8_choice.cu) and read there by the kernels
after it, so the op never waits for the GPU (it runs inside ``mx.compile`` and
CUDA graphs like any op); where the choice needs more moduli than the path
carries, the float32 fallback (``tile_threads``) computes the product in the
same queue. :func:`assess` reads the choice back and says what was done and
why. Where K is past the int32 bound or the GPU cannot run the scheme, the
product goes to another kernel instead (:func:`fallback`). ``moduli=s`` skips
the choice and uses s moduli with the bits they carry.

Rows of A and columns of B that hold Inf or NaN do not stop the emulation:
the outputs they touch are computed in float32 (the same fallback, in their
tiles alone), so Inf and NaN land where ``mx.matmul`` puts them.
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


_NO_LINES = (np.zeros(0, np.int64),) * 3  # line_exponents of no lines


def _check_moduli(moduli: int | None) -> None:
    if moduli is not None and not 1 <= moduli <= len(_moduli.MODULI):
        raise ValueError(f"moduli must be 1..{len(_moduli.MODULI)}, got {moduli}")


def _fixed(k: int, moduli: int) -> scheme.Assessment:
    """The choice when the caller names the moduli: the bits they carry at K."""
    _check_moduli(moduli)
    if k > _moduli.INT32_EXACT_K:
        return scheme.decide(k, _NO_LINES, _NO_LINES)
    bits = _moduli.bits_for(max(k, 1), moduli)
    reason = None if 1 <= bits <= gpu.MAX_BITS else f"{moduli} moduli keep {bits} bits a side at K={k}"
    return scheme.Assessment(k=k, bits=bits, moduli=moduli if reason is None else None, a_lost_bits=0,
                             b_lost_bits=0, a_span=0, b_span=0, wide=None, reason=reason)


_NOT_HERE = "the INT8 emulation runs on Hopper GPUs (wgmma) and on the CPU; this device has neither"


def _host_verdict(a: mx.array, b: mx.array, moduli: int | None, path: str) -> scheme.Assessment | None:
    """The choice where the host makes it: named moduli, K past the int32
    bound, a device without the path, or the CPU's numpy reference (which
    reads the operands). None: the device makes it (the GPU path)."""
    k = a.shape[1]
    if moduli is not None:
        verdict = _fixed(k, moduli)
    elif k > _moduli.INT32_EXACT_K:
        verdict = scheme.decide(k, _NO_LINES, _NO_LINES)
    elif path == "wgmma":
        return None
    elif path == "numpy":
        verdict = scheme.decide(k, scheme.exponents(np.array(a), 1), scheme.exponents(np.array(b), 0),
                                max_bits=gpu.MAX_BITS, max_moduli=gpu.MAX_MODULI)
    else:
        verdict = scheme.decide(k, _NO_LINES, _NO_LINES)
    if verdict.reason is None and path == "fallback":
        verdict = scheme.Assessment(**{**verdict.__dict__, "moduli": None, "reason": _NOT_HERE})
    return verdict


def as_2d_products(a: mx.array, b: mx.array, stream) -> tuple:
    """The 2-D float32 products of a @ b with mx.matmul's semantics (1-D
    operands, broadcast batch): the plan and a list of (a_i, b_i) views. The
    kernels read any strides, so views are passed as they are: a reshape of
    a transposed view would copy it."""
    check_operand(a, "a", OPERAND_DTYPES)
    check_operand(b, "b", OPERAND_DTYPES)
    p = plan(a.shape, b.shape)
    a32 = a.astype(mx.float32, stream=stream) if a.dtype != mx.float32 else a
    b32 = b.astype(mx.float32, stream=stream) if b.dtype != mx.float32 else b
    a2 = a32[None] if a.ndim == 1 else a32
    b2 = b32[:, None] if b.ndim == 1 else b32
    if a2.ndim == 2 and b2.ndim == 2:
        return p, [(a2, b2)]
    batch = p.batch_shape
    a3 = mx.broadcast_to(a2, (*batch, p.M, p.K), stream=stream).reshape(-1, p.M, p.K)
    b3 = mx.broadcast_to(b2, (*batch, p.K, p.N), stream=stream).reshape(-1, p.K, p.N)
    return p, [(a3[i], b3[i]) for i in range(a3.shape[0])]


def assess(a: mx.array, b: mx.array, moduli: int | None = None, *, stream=None) -> list[scheme.Assessment]:
    """What :func:`int8_emulated` does for each 2-D product of ``a @ b``: the
    moduli and bits a side, or (``reason``) why the product is computed by
    another kernel. On the GPU this runs the pre-pass and reads its choice
    back (a synchronization; the op itself never does)."""
    stream = device.canonical(stream)
    p, pairs = as_2d_products(a, b, stream)
    if 0 in (p.M, p.N, p.K):
        return [scheme.Assessment(k=p.K, bits=0, moduli=None, a_lost_bits=0, b_lost_bits=0, a_span=0,
                                  b_span=0, wide=None, reason="an empty product: zeros, nothing to emulate")
                for _ in pairs]
    path = _path(stream)
    return [_host_verdict(x, y, moduli, path) or gpu.Operands(x, y, stream).assessment() for x, y in pairs]


def fallback(verdict: scheme.Assessment):
    """The op that computes a product the emulation does not take: where its
    lines need more bits than the moduli can carry (a wide exponent range),
    ``tile_threads``, plain float32 FMAs, whose error is float32 SGEMM's
    whatever the range (3xTF32 is not: its split leaves the small parts of
    such lines' entries in TF32, measured 8.6e-8 against SGEMM's 2.7e-8 on
    rows of 1e30 next to 1e-30); otherwise ``matmul``."""
    from .. import ops

    needs_more_bits = verdict.moduli is None and (verdict.wide is not None or verdict.bits > gpu.MAX_BITS)
    return ops.tile_threads if needs_more_bits else ops.matmul


def reference(a: mx.array, b: mx.array, moduli: int | None = None) -> mx.array:
    """The op's arithmetic in numpy for one 2-D product (the tests' reference;
    the GPU kernels give the same result, bit for bit): the moduli chosen as
    the device chooses them (or ``moduli``), the emulated product, and the
    outputs of non-finite lines in float32. A product the emulation does not
    take is computed by :func:`fallback`'s op. Slow (seconds at 1024^3): the
    op itself computes with ``mx.matmul`` on the CPU."""
    verdict = _host_verdict(a, b, moduli, "numpy")
    if verdict.reason is not None:
        return fallback(verdict)(a, b)
    an, bn = np.array(a.astype(mx.float32)), np.array(b.astype(mx.float32))
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

    On a Hopper GPU: the kernels of :mod:`mlx_sgemm.emulation.gpu` (the
    pre-pass and choice, residues, INT8 wgmma products reduced modulo each
    p_i, the float32 fallback's tiles, the CRT). On MLX's CPU backend:
    ``mx.matmul``, like every op there (:func:`reference` runs the same
    steps in numpy, for the tests). Elsewhere, and where
    :func:`assess` gives a reason, the kernel :func:`fallback` names. Not
    differentiable yet. On the GPU it never waits for the GPU: the choice of
    moduli is made and read on the device.
    """
    stream = device.canonical(stream)
    dtype = mx.result_type(a, b)
    p, pairs = as_2d_products(a, b, stream)
    if 0 in (p.M, p.N, p.K) or not pairs:  # mx.matmul's empty product: zeros, nothing to choose
        return mx.zeros(p.out_shape, dtype=dtype, stream=stream)
    _check_moduli(moduli)
    path = _path(stream)
    if path == "numpy":  # MLX's CPU backend: every op computes with mx.matmul there
        return mx.matmul(a, b, stream=stream)
    results = []
    for x, y in pairs:
        verdict = _host_verdict(x, y, moduli, path)
        if verdict is None:  # the GPU path: the device chooses, the fallback included
            results.append(gpu.emulated(x, y, stream=stream))
        elif verdict.reason is not None:
            results.append(fallback(verdict)(x, y, stream=stream))
        else:
            results.append(gpu.emulated(x, y, verdict.moduli, stream))
    c = results[0] if len(results) == 1 else mx.stack(results)  # no batch: no copy into a stack
    return c.reshape(p.out_shape).astype(dtype, stream=stream)
