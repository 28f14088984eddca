"""Layers that run their products on mlx-sgemm kernels.

``Linear`` is a drop-in for ``mlx.nn.Linear``: same constructor, parameters,
initialisation and bias, so checkpoints of either load into the other. Only the
product differs: ``x @ W.T`` runs on the chosen kernel, with ``W.T`` read in
place as a transposed view.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn
from mlx.utils import tree_map_with_path

from . import ops

KERNELS = ("matmul", *ops.STAGE_OPS)


def kernel_function(kernel: str):
    """The op called ``kernel`` ("matmul" or a stage name)."""
    if kernel == "matmul":
        return ops.matmul
    if kernel in ops.STAGE_OPS:
        return ops.STAGE_OPS[kernel]
    raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")


class Linear(mlx.nn.Linear):
    """``mlx.nn.Linear`` with its product on an mlx-sgemm kernel.

    Args:
        input_dims, output_dims, bias: as for ``mlx.nn.Linear``.
        kernel: ``"matmul"`` (default, the adaptive op) or a stage name
            (``"tile_simdgroup"``, ...).

    Inputs must be float32, like the ops'.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, kernel: str = "matmul"):
        super().__init__(input_dims, output_dims, bias=bias)
        self._product = kernel_function(kernel)
        self.kernel = kernel

    @classmethod
    def from_linear(cls, linear: mlx.nn.Linear, kernel: str = "matmul") -> "Linear":
        """A Linear sharing ``linear``'s weight and bias arrays."""
        output_dims, input_dims = linear.weight.shape
        layer = cls(input_dims, output_dims, bias="bias" in linear, kernel=kernel)
        layer.update(dict(linear.parameters()))
        return layer

    def _extra_repr(self) -> str:
        return f"{super()._extra_repr()}, kernel={self.kernel!r}"

    def __call__(self, x: mx.array) -> mx.array:
        y = self._product(x, self.weight.T)
        if "bias" in self:
            y = y + self["bias"]
        return y


def replace_linear(model: mlx.nn.Module, kernel: str = "matmul") -> mlx.nn.Module:
    """Swap every ``mlx.nn.Linear`` of ``model`` for :class:`Linear`, in place.

    The new layers share the old ones' parameter arrays; layers already ours are
    left as they are. Returns ``model``.
    """
    kernel_function(kernel)  # a bad name fails before anything changes

    def swap(_path, module):
        if isinstance(module, mlx.nn.Linear) and not isinstance(module, Linear):
            return Linear.from_linear(module, kernel)
        return module

    leaves = tree_map_with_path(swap, model.leaf_modules(), is_leaf=mlx.nn.Module.is_module)
    model.update_modules(leaves)
    return model
