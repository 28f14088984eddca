"""Tensor maps for the TMA: the 128-byte descriptors of a 2-D array that Hopper's
bulk tensor copies (``cp.async.bulk.tensor``) read, made by the CUDA driver.

``mx.fast.cuda_kernel`` passes arrays only, and Python does not see an array's
device address. So this module asks the driver (``cuTensorMapEncodeTiled``,
through ctypes) for a map of the right shape with a stand-in address, once per
shape, and the kernel writes its operand's address in (``tensormap.replace``,
``sgemm::make_tensor_map`` in kernels/cuda/sgemm/tma.cuh) before its first copy. The
maps travel in the kernel's ``params`` input (problem.TENSOR_MAPS).
"""

from __future__ import annotations

import ctypes
import functools
import struct

# CUtensorMapDataType, ...Interleave, ...Swizzle, ...L2promotion, ...FloatOOBfill (cuda.h).
_FLOAT32, _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_256B, _FILL_ZEROS = 7, 0, 3, 3, 0
# Any 16-byte aligned value but 0 (a map of zeros means "none" to the kernel):
# each block writes its operand's address over it.
_STAND_IN_ADDRESS = 1 << 20
WORDS = 32  # int32 words of a tensor map
NONE = (0,) * WORDS  # what the kernel reads as "no map: copy without the TMA"
BOX_COLUMNS = 32  # 128 bytes of float32: the 128-byte swizzle's row


@functools.cache
def _encode_tiled():
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    encode = driver.cuTensorMapEncodeTiled
    encode.restype = ctypes.c_int
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    encode.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p,
                       u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return encode


def available() -> bool:
    """Whether the CUDA driver (libcuda) is here to make tensor maps."""
    return _encode_tiled() is not None


@functools.lru_cache(maxsize=1024)
def swizzled_rows(rows: int, cols: int, box_rows: int) -> tuple[int, ...]:
    """The map (32 int32 words) of a row-major ``rows x cols`` float32 matrix
    whose rows are ``cols`` apart, copied in boxes of ``box_rows`` rows x 32
    columns into the 128-byte swizzled layout wgmma reads (sgemm::SwizzledTile),
    zeros outside the matrix. :data:`NONE` where the TMA cannot take it (rows
    not 16-byte aligned) or there is no driver to ask."""
    encode = _encode_tiled()
    if encode is None or cols % 4 or not 1 <= box_rows <= 256:
        return NONE
    buffer = ctypes.create_string_buffer(128 + 64)
    address = -(-ctypes.addressof(buffer) // 64) * 64  # a CUtensorMap is 64-byte aligned
    status = encode(
        address, _FLOAT32, 2, ctypes.c_void_p(_STAND_IN_ADDRESS),
        (ctypes.c_uint64 * 2)(cols, rows), (ctypes.c_uint64 * 1)(cols * 4),
        (ctypes.c_uint32 * 2)(BOX_COLUMNS, box_rows), (ctypes.c_uint32 * 2)(1, 1),
        _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_256B, _FILL_ZEROS,
    )
    if status != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed (CUresult {status}) for {rows}x{cols}, box {box_rows}x32")
    return struct.unpack(f"<{WORDS}i", ctypes.string_at(address, 128))
