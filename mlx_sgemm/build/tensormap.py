"""Tensor maps for the TMA: the 128-byte descriptors of a 2-D array that Hopper's
bulk tensor copies (``cp.async.bulk.tensor``) read, made by the CUDA driver.

``mx.fast.cuda_kernel`` passes arrays only, and Python does not see an array's
device address. So this module asks the driver (``cuTensorMapEncodeTiled``,
through ctypes) for a map of the right shape with a stand-in address, once per
shape, and the kernel writes its operand's address in (``tensormap.replace``,
``sgemm::publish_tensor_map`` and ``acquire_tensor_map`` in kernels/cuda/sgemm/tma.cuh)
before its first copy. The maps travel in the kernel's ``params`` input
(problem.TENSOR_MAPS).
"""

from __future__ import annotations

import ctypes
import functools
import struct

# CUtensorMapDataType, ...Interleave, ...Swizzle, ...L2promotion, ...FloatOOBfill (cuda.h).
_FLOAT16, _FLOAT32, _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_256B, _FILL_ZEROS = 6, 7, 0, 3, 3, 0
# What the map says of an element, by dtype name: its code and size. The TMA
# moves bits, so bfloat16's map is float16's (the same 2 bytes, zeros the same).
_ELEMENTS = {"float32": (_FLOAT32, 4), "float16": (_FLOAT16, 2), "bfloat16": (_FLOAT16, 2)}
SWIZZLE_BYTES = 128  # a box's row: the 128-byte swizzle's
# Any 16-byte aligned value but 0 (a map of zeros means "none" to the kernel):
# each block writes its operand's address over it.
_STAND_IN_ADDRESS = 1 << 20
WORDS = 32  # int32 words of a tensor map
NONE = (0,) * WORDS  # what the kernel reads as "no map: copy without the TMA"


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
def swizzled_rows(rows: int, cols: int, box_rows: int, dtype: str = "float32") -> tuple[int, ...]:
    """The map (32 int32 words) of a row-major ``rows x cols`` matrix of
    ``dtype`` elements whose rows are ``cols`` apart, copied in boxes of
    ``box_rows`` rows x 128 bytes (32 float32s, 64 halves) into the 128-byte
    swizzled layout wgmma reads (sgemm::SwizzledTile, sgemm::HalfKTile), zeros
    outside the matrix. :data:`NONE` where the TMA cannot take it (rows not
    16-byte aligned) or there is no driver to ask."""
    code, size = _ELEMENTS[dtype]
    encode = _encode_tiled()
    if encode is None or cols * size % 16 or not 1 <= box_rows <= 256:
        return NONE
    buffer = ctypes.create_string_buffer(128 + 64)
    address = -(-ctypes.addressof(buffer) // 64) * 64  # a CUtensorMap is 64-byte aligned
    box_columns = SWIZZLE_BYTES // size
    status = encode(
        address, code, 2, ctypes.c_void_p(_STAND_IN_ADDRESS),
        (ctypes.c_uint64 * 2)(cols, rows), (ctypes.c_uint64 * 1)(cols * size),
        (ctypes.c_uint32 * 2)(box_columns, box_rows), (ctypes.c_uint32 * 2)(1, 1),
        _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_PROMOTION_256B, _FILL_ZEROS,
    )
    if status != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed (CUresult {status}) for {rows}x{cols} {dtype}, "
                           f"box {box_rows}x{box_columns}")
    return struct.unpack(f"<{WORDS}i", ctypes.string_at(address, 128))
