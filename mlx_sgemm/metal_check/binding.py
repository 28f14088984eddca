"""The buffers of a dispatch, bound as MLX binds them.

``CustomKernel::eval_gpu`` (mlx/backend/metal/custom_kernel.cpp) binds each
input (copied to row-contiguous first if ``ensure_row_contiguous`` and it is
not), then its shape (int32), strides (int64, in elements) and ndim (int32)
where the kernel's source names them, then the outputs, each allocated
uninitialized or filled with ``init_value``.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class Buffer:
    """One ``[[buffer(i)]]``: an input (``data``), or an output (``output``):
    uninitialized when ``data`` is None, else starting as ``data``."""

    name: str
    data: np.ndarray | None
    nbytes: int
    offset: int = 0  # bytes from the buffer's start to where the kernel's pointer points
    elem_size: int = 1
    output: bool = False


def strided_buffer(name: str, view: np.ndarray) -> tuple[Buffer, list[int]]:
    """The buffer MLX binds for an array of any strides, and the strides it passes.

    MLX binds the array's buffer at the array's own offset, so the kernel's
    pointer is element (0, ..., 0), and passes ``<name>_strides`` in elements:
    a transposed view, a slice (negative steps too) or a broadcast (stride 0)
    arrives as it is. Here the buffer holds exactly the span of memory the view
    can address, from its lowest to its highest element: a read of anything
    outside it is out of bounds, and in the gaps between a slice's rows it
    reads all bits set (a NaN, or -1): what lies there is not the kernel's to
    read.
    """
    view = np.asarray(view)
    item = view.itemsize
    if any(st % item for st in view.strides):
        raise ValueError(f"{name}: strides {view.strides} are not whole elements")
    strides = [st // item for st in view.strides]
    lo = sum(st * (n - 1) for st, n in zip(strides, view.shape) if st < 0)
    hi = sum(st * (n - 1) for st, n in zip(strides, view.shape) if st > 0)
    flat = np.empty(hi - lo + 1, dtype=view.dtype)
    flat.view(np.uint8)[...] = 0xFF
    np.lib.stride_tricks.as_strided(flat[-lo:], view.shape, view.strides)[...] = view
    return Buffer(name, flat, flat.nbytes, offset=-lo * item, elem_size=item), strides


def bind(
    input_names, inputs: list[np.ndarray], shape_infos: list[tuple[bool, bool, bool]],
    output_names, outputs: list[tuple[tuple[int, ...], np.dtype]],
    *, row_contiguous: bool, init_value: float | None = None,
) -> list[Buffer]:
    """Every buffer of the dispatch, in MLX's binding order.

    With ``row_contiguous`` an input that is not C-contiguous is copied (as MLX
    copies one whose row_contiguous flag is off); without, it is bound in
    place at its own strides (:func:`strided_buffer`).
    """
    buffers = []
    for name, arr, (has_shape, has_strides, has_ndim) in zip(input_names, inputs, shape_infos):
        if row_contiguous:
            arr = np.ascontiguousarray(arr)
        buf, strides = strided_buffer(name, arr)
        buffers.append(buf)
        if arr.ndim > 0:
            if has_shape:
                s = np.asarray(arr.shape, dtype=np.int32)
                buffers.append(Buffer(f"{name}_shape", s, s.nbytes, elem_size=4))
            if has_strides:
                s = np.asarray(strides, dtype=np.int64)
                buffers.append(Buffer(f"{name}_strides", s, s.nbytes, elem_size=8))
            if has_ndim:
                s = np.asarray(arr.ndim, dtype=np.int32)
                buffers.append(Buffer(f"{name}_ndim", s, s.nbytes, elem_size=4))
    for name, (shape, dtype) in zip(output_names, outputs):
        dtype = np.dtype(dtype)
        size = int(np.prod(shape, dtype=np.int64))
        data = None if init_value is None else np.full(size, init_value).astype(dtype)
        buffers.append(Buffer(name, data, size * dtype.itemsize, elem_size=dtype.itemsize,
                              output=True))
    return buffers
