"""How far a product is from the exact one.

The error measure is ``||C - ref||_F / || |A| |B| ||_F`` with ``ref = A @ B`` in
float64. Dividing by the product of the absolute values (rather than by
``||ref||``) keeps the measure meaningful when long dot products cancel: any
float32 summation order lands near 1e-7, TF32 near 1e-4, an indexing bug near 1.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np


def reference(a, b) -> np.ndarray:
    """``a @ b`` in float64 with matmul's broadcasting."""
    return np.matmul(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


class Reference:
    """``a @ b`` in float64 and the measure's scale, worked out once for the
    results of many kernels on the same operands."""

    def __init__(self, a, b):
        a64 = np.asarray(a, dtype=np.float64)
        b64 = np.asarray(b, dtype=np.float64)
        self.exact = reference(a64, b64)
        self.scale = float(np.linalg.norm(np.matmul(np.abs(a64), np.abs(b64))))

    def error(self, c) -> float:
        """The error of ``c`` as a result of the product; NaN anywhere in ``c`` gives inf."""
        c = np.asarray(c, dtype=np.float64)
        if c.shape != self.exact.shape:
            raise ValueError(f"result shape {c.shape} != expected {self.exact.shape}")
        if not np.all(np.isfinite(c)):
            return float("inf")
        diff = np.linalg.norm(c - self.exact)
        return float(diff / self.scale) if self.scale > 0 else float(diff)


def relative_error(c, a, b) -> float:
    """The error of ``c`` as a result of ``a @ b``; NaN anywhere in ``c`` gives inf."""
    return Reference(a, b).error(c)


def random_operands(shape_a, shape_b, seed=None):
    """Fresh random non-zero float32 operands (normal, shifted away from 0)."""
    rng = np.random.default_rng(seed)

    def draw(shape):
        x = rng.standard_normal(shape).astype(np.float32)
        return mx.array(np.where(np.abs(x) < 1e-3, 1e-3, x))

    return draw(shape_a), draw(shape_b)


# GEMMul8's test matrices (Uchino, Ozaki and Imamura, the INT8 emulation of
# DGEMM/SGEMM): entries (rand - 0.5) * exp(phi * randn), whose magnitudes spread
# over about e^(+-3 phi) (three standard deviations): with phi = 4 about 2^35.
WIDE_RANGE_PHI = 4.0


def wide_range_operands(shape_a, shape_b, phi: float = WIDE_RANGE_PHI, seed=None):
    """Fresh float32 operands whose entries span a wide range of magnitudes
    (GEMMul8's test matrices, :data:`WIDE_RANGE_PHI`)."""
    rng = np.random.default_rng(seed)

    def draw(shape):
        return mx.array(((rng.random(shape) - 0.5) * np.exp(phi * rng.standard_normal(shape))).astype(np.float32))

    return draw(shape_a), draw(shape_b)


def emulation_inputs(kind: str, m: int, n: int, k: int, rng: np.random.Generator):
    """The emulations' accuracy inputs, float32 numpy (m x k, k x n): "normal",
    "positive" (uniform in [0, 1)), GEMMul8's "phi<x>" ((rand - 0.5) exp(phi
    randn)), and "1e30 next to 1e-30" (normal, with rows of A and columns of
    B scaled by both)."""
    if kind == "positive":
        return rng.random((m, k)).astype(np.float32), rng.random((k, n)).astype(np.float32)
    if kind.startswith("phi"):
        phi = float(kind[3:])
        draw = lambda shape: ((rng.random(shape) - 0.5) * np.exp(phi * rng.standard_normal(shape)))  # noqa: E731
        return draw((m, k)).astype(np.float32), draw((k, n)).astype(np.float32)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    if kind == "1e30 next to 1e-30":
        a[::3, ::2] *= np.float32(1e30)
        a[1::3, 1::2] *= np.float32(1e-30)
        b[::2, ::5] *= np.float32(1e-30)
    return a, b


def errors_beside_cublas(c: mx.array, a: np.ndarray, b: np.ndarray) -> dict[str, str]:
    """An emulation's accuracy-table columns: ``c``'s normwise and worst
    componentwise errors against float64 (emulation.scheme.errors) next to
    mx.matmul's on the same operands (cuBLAS SGEMM where MLX_ENABLE_TF32=0)."""
    from ..emulation import scheme

    ours = scheme.errors(np.array(c), a, b)
    cublas = scheme.errors(np.array(mx.matmul(mx.array(a), mx.array(b))), a, b)
    return dict(normwise=f"{ours[0]:.2e}", cublas_normwise=f"{cublas[0]:.2e}",
                componentwise=f"{ours[1]:.2e}", cublas_componentwise=f"{cublas[1]:.2e}")
