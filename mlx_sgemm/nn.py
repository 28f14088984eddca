"""Layers that run their products on mlx-sgemm kernels.

``Linear`` is a drop-in for ``mlx.nn.Linear``: same constructor, parameters,
initialisation and bias, so checkpoints of either load into the other. Only the
product differs: ``x @ W.T`` runs on the chosen kernel, with ``W.T`` read in
place as a transposed view. ``AllToShardedLinear`` and ``ShardedToAllLinear``
are the same for MLX's tensor-parallel layers (``mx.distributed``): same
constructor, ``from_linear``, parameters and communication; the local product
is ours.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn
from mlx.nn.layers.distributed import sum_gradients
from mlx.utils import tree_map_with_path

from . import ops


class _OurProduct:
    """The kernel choice every layer here shares (a plain attribute, not a parameter)."""

    def _use_kernel(self, kernel: str):
        self._product = ops.op_by_name(kernel)
        self.kernel = kernel
        return self

    def _extra_repr(self) -> str:
        return f"{super()._extra_repr()}, kernel={self.kernel!r}"

    def _affine(self, x: mx.array) -> mx.array:
        """x @ W.T (+ bias) with W.T a transposed view, read in place."""
        y = self._product(x, self["weight"].T)
        return y + self["bias"] if "bias" in self else y


class Linear(_OurProduct, mlx.nn.Linear):
    """``mlx.nn.Linear`` with its product on an mlx-sgemm kernel.

    Args:
        input_dims, output_dims, bias: as for ``mlx.nn.Linear``.
        kernel: ``"matmul"`` (default, the adaptive op) or a stage name
            (``"tile_simdgroup"``, ...).

    Inputs must be float32, like the ops'.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, kernel: str = "matmul"):
        super().__init__(input_dims, output_dims, bias=bias)
        self._use_kernel(kernel)

    @classmethod
    def from_linear(cls, linear: mlx.nn.Linear, kernel: str = "matmul") -> "Linear":
        """A Linear sharing ``linear``'s weight and bias arrays."""
        output_dims, input_dims = linear.weight.shape
        layer = cls(input_dims, output_dims, bias="bias" in linear, kernel=kernel)
        layer.update(dict(linear.parameters()))
        return layer

    def __call__(self, x: mx.array) -> mx.array:
        return self._affine(x)


class _ShardedProduct(_OurProduct):
    """Constructor and ``from_linear`` of MLX's sharded layers, plus ``kernel``."""

    def __init__(self, input_dims, output_dims, bias=True, group=None, kernel: str = "matmul"):
        super().__init__(input_dims, output_dims, bias, group)
        self._use_kernel(kernel)

    @classmethod
    def from_linear(cls, linear_layer, *, segments=1, group=None, kernel: str = "matmul"):
        return super().from_linear(linear_layer, segments=segments, group=group)._use_kernel(kernel)


class AllToShardedLinear(_ShardedProduct, mlx.nn.AllToShardedLinear):
    """``mlx.nn.AllToShardedLinear`` (output features sharded over the group)
    with its local product on an mlx-sgemm kernel. Same arguments, plus
    ``kernel``; gradients of the input are summed over the group as in MLX."""

    def __call__(self, x: mx.array) -> mx.array:
        return self._affine(sum_gradients(self.group)(x))


class ShardedToAllLinear(_ShardedProduct, mlx.nn.ShardedToAllLinear):
    """``mlx.nn.ShardedToAllLinear`` (input features sharded, outputs summed
    over the group) with its local product on an mlx-sgemm kernel."""

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.distributed.all_sum(self._product(x, self["weight"].T), group=self.group)
        return y + self["bias"] if "bias" in self else y


def _ours(module: mlx.nn.Module, kernel: str):
    """Our layer for one of MLX's, sharing its parameters (and group), or None."""
    if isinstance(module, _OurProduct):
        return None
    if isinstance(module, mlx.nn.AllToShardedLinear):
        out_shard, in_dims = module.weight.shape
        layer = AllToShardedLinear(in_dims, out_shard * module.group.size(), "bias" in module,
                                   module.group, kernel)
    elif isinstance(module, mlx.nn.ShardedToAllLinear):
        out_dims, in_shard = module.weight.shape
        layer = ShardedToAllLinear(in_shard * module.group.size(), out_dims, "bias" in module,
                                   module.group, kernel)
    elif isinstance(module, mlx.nn.Linear):
        out_dims, in_dims = module.weight.shape
        layer = Linear(in_dims, out_dims, "bias" in module, kernel)
    else:
        return None
    layer.update(dict(module.parameters()))
    return layer


def replace_linear(model: mlx.nn.Module, kernel: str = "matmul") -> mlx.nn.Module:
    """Swap every ``mlx.nn.Linear`` of ``model`` for :class:`Linear`, in place,
    and MLX's ``AllToShardedLinear`` / ``ShardedToAllLinear`` for ours.

    The new layers share the old ones' parameter arrays (and group); layers
    already ours are left as they are. Returns ``model``.
    """
    ops.op_by_name(kernel)  # a bad name fails before anything changes

    def swap(_path, module):
        return _ours(module, kernel) or module

    leaves = tree_map_with_path(swap, model.leaf_modules(), is_leaf=mlx.nn.Module.is_module)
    model.update_modules(leaves)
    return model
