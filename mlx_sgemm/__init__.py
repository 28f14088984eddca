"""mlx-sgemm: the classic SGEMM optimization journey as MLX ops on Metal and CUDA.

>>> import mlx.core as mx, mlx_sgemm
>>> c = mlx_sgemm.tile_simdgroup(mx.random.normal((512, 256)), mx.random.normal((256, 128)))
"""

from . import nn
from .autotuning import autotune
from .dispatch.device import backend
from .emulation.half_split import fp16_emulated
from .emulation.op import int8_emulated
from .explain import Explanation, explain
from .ops import (
    gemm,
    matmul,
    naive,
    poisoned_outputs,
    tile_16,
    tile_32,
    tile_async,
    tile_simdgroup,
    tile_threads,
)

__version__ = "0.1.0"

__all__ = [
    "autotune",
    "backend",
    "explain",
    "Explanation",
    "gemm",
    "matmul",
    "naive",
    "nn",
    "tile_16",
    "tile_32",
    "tile_threads",
    "tile_simdgroup",
    "tile_async",
    "int8_emulated",
    "fp16_emulated",
    "poisoned_outputs",
    "distributed",
]


def __getattr__(name: str):
    # mlx_sgemm.distributed on first use: it imports mx.distributed's machinery,
    # which a single-GPU model never needs at import time.
    if name == "distributed":
        import importlib

        return importlib.import_module(".distributed", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
