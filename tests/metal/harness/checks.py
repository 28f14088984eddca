"""What the Metal harness tests share: operands in every layout, error checks, and
edited copies of a spec (for the mutation tests)."""

from __future__ import annotations

import dataclasses

import numpy as np

from mlx_sgemm.bench.accuracy import relative_error
from mlx_sgemm.build import specs

from . import gemm
from .elements import element_type, values

# float32 accumulation lands near 1e-7 (see mlx_sgemm.bench.accuracy); a bug near 1.
TOLERANCE = 1e-6


def operands(a_shape, b_shape, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    return a, b


# ---- operands in any layout -----------------------------------------------------------

# How an operand of a given shape is laid out in memory. Each is a NumPy view
# with the strides MLX would give the same view (a.T, x[::2, 3:], broadcast_to).
LAYOUTS = {
    "row": "row-major (contiguous)",
    "col": "column-major: a transposed view, row stride 1",
    "slice": "every other row of a wider matrix: row stride > width",
    "strided": "every other row and third column: no unit stride",
    "neg": "rows and columns reversed: negative strides",
    "bcast_rows": "one row broadcast to every row: row stride 0",
    "bcast_cols": "one column broadcast to every column: column stride 0",
    "scalar": "one element broadcast everywhere: both strides 0",
}


def layout(shape, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A float32 array of ``shape`` (batch dims allowed) laid out as LAYOUTS[kind]."""
    *batch, r, c = shape

    def draw(*dims):
        return rng.standard_normal(dims).astype(np.float32)

    if kind == "row":
        return draw(*shape)
    if kind == "col":
        return np.swapaxes(draw(*batch, c, r), -1, -2)
    if kind == "slice":
        return draw(*batch, 2 * r + 1, c + 5)[..., 1::2, 3 : 3 + c]
    if kind == "strided":
        return draw(*batch, 2 * r, 3 * c)[..., ::2, ::3]
    if kind == "neg":
        return draw(*batch, r, c)[..., ::-1, ::-1]
    if kind == "bcast_rows":
        return np.broadcast_to(draw(*batch, 1, c), shape)
    if kind == "bcast_cols":
        return np.broadcast_to(draw(*batch, r, 1), shape)
    if kind == "scalar":
        return np.broadcast_to(draw(1, 1), shape)
    raise ValueError(kind)


def gemm_error(out, a, b, c=None, alpha=1.0, beta=0.0) -> float:
    """relative_error for ``alpha * a @ b + beta * c``: ||out - ref|| over the
    norm of the sum of absolute terms. NaN anywhere gives inf."""
    a64, b64 = values(np.asarray(a)), values(np.asarray(b))
    if c is None and alpha == 1.0 and beta == 0.0:
        return relative_error(out, a64, b64)
    out = np.asarray(out, np.float64)
    if not np.all(np.isfinite(out)):
        return float("inf")
    ref = alpha * np.matmul(a64, b64)
    if out.shape != ref.shape:
        raise ValueError(f"result shape {out.shape} != expected {ref.shape}")
    terms = abs(alpha) * np.matmul(np.abs(a64), np.abs(b64))
    if beta != 0.0:  # with beta == 0, c is not read (it may be NaN)
        c64 = np.broadcast_to(np.asarray(c, np.float64), ref.shape)
        ref = ref + beta * c64
        terms = terms + abs(beta) * np.abs(c64)
    scale, diff = np.linalg.norm(terms), np.linalg.norm(out - ref)
    return float(diff / scale) if scale > 0 else float(diff)


def check(spec, a, b, *, c=None, alpha=1.0, beta=0.0, **kwargs) -> np.ndarray:
    """Run ``spec`` on ``a``, ``b`` (any layout, float32 or a half type:
    harness.elements) in the harness; assert it is right: within float32
    accumulation of float64 of the operands' values."""
    extra = dict(c=c, alpha=alpha, beta=beta) if "c_in" in spec.input_names else {}
    out = gemm.matmul(spec, a, b, **extra, **kwargs)
    err = gemm_error(out, a, b, **extra)
    assert err < TOLERANCE, (
        f"{spec.stage} {element_type(a)} {a.shape} (strides {a.strides}) @ {element_type(b)} {b.shape} "
        f"(strides {b.strides}): "
        f"relative error {err:.3g}"
    )
    return out


# ---- edited specs ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Variant(specs.KernelSpec):
    """A registered spec with its body or header edited (for the mutation tests)."""

    body: str = ""
    header_text: str = ""

    def source(self) -> str:
        return self.body

    def header(self) -> str:
        return self.header_text


def variant(spec, *, body=None, header=None) -> Variant:
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(specs.KernelSpec)}
    return Variant(
        **fields,
        body=spec.source() if body is None else body,
        header_text=spec.header() if header is None else header,
    )


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"expected one {old!r}"
    return text.replace(old, new)
