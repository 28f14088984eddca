"""Operands in an element type (float32, float16, bfloat16) as NumPy holds them
for the harness, and their float64 values.

NumPy has no bfloat16: a bfloat16 operand is held as its bits in int16 (the
kernel reads the bytes, and int16's -1, which the harness puts between a
slice's rows, is a bfloat16 NaN). float64 holds every half value exactly, so a
product checked against float64 of the values sees only the kernel's float32
accumulation.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

HALF_TYPES = ("float16", "bfloat16")


def in_element_type(x: np.ndarray, element_type_: str) -> np.ndarray:
    """float32 ``x`` rounded to ``element_type_`` (to nearest even), as the
    harness holds it: float32, float16, or bfloat16's bits as int16."""
    if element_type_ == "float32":
        return x
    if element_type_ == "float16":
        return x.astype(np.float16)
    return np.array(mx.array(x).astype(mx.bfloat16).view(mx.int16), copy=True)


def element_type(x: np.ndarray) -> str:
    """The dtype name an array held as above stands for (int16: bfloat16)."""
    return {np.dtype(np.int16): "bfloat16"}.get(x.dtype, str(x.dtype))


def values(x: np.ndarray) -> np.ndarray:
    """The float64 values of an operand held as above."""
    if x.dtype == np.int16:  # bfloat16: the upper half of the float32 of the same value
        return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return np.asarray(x, np.float64)


def element_view(view: np.ndarray, element_type_: str) -> np.ndarray:
    """``view`` (a float32 view of a contiguous array, any strides, as
    checks.layout makes them) rounded to ``element_type_``: the same view of
    that array rounded, so the kernel meets the same strides."""
    base = view
    while base.base is not None:
        base = base.base
    assert base.flags.c_contiguous and base.dtype == np.float32
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4
    rounded = in_element_type(base.reshape(-1), element_type_)
    strides = [s // 4 * rounded.itemsize for s in view.strides]
    return np.lib.stride_tricks.as_strided(rounded[offset:], view.shape, strides)
