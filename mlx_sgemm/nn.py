"""Layers that run their products on mlx-sgemm kernels.

``Linear`` is a drop-in for ``mlx.nn.Linear``: same constructor, parameters,
initialisation and bias, so checkpoints of either load into the other. Only the
product differs: ``x @ W.T`` runs on the chosen kernel, with ``W.T`` read in
place as a transposed view. ``AllToShardedLinear`` and ``ShardedToAllLinear``
are the same for MLX's tensor-parallel layers (``mx.distributed``): same
constructor, ``from_linear``, parameters and communication; the local product
is ours.

Weights and inputs may be float32, float16 or bfloat16 (the ops' dtypes);
``replace_linear`` leaves the layers it cannot serve as they are (quantized
ones, weights of other dtypes) and logs each at INFO on the ``mlx_sgemm``
logger.
"""

from __future__ import annotations

import logging

import mlx.core as mx
import mlx.nn
from mlx.nn.layers.distributed import sum_gradients
from mlx.utils import tree_map_with_path

from . import ops
from .dispatch.problem import OPERAND_DTYPES, dtype_name

log = logging.getLogger("mlx_sgemm")

# MLX's layers whose weights are quantized (packed integers and scales): our
# kernels multiply float arrays, so replace_linear leaves them alone.
_QUANTIZED = tuple(
    getattr(mlx.nn, name)
    for name in ("QuantizedLinear", "QQLinear", "QuantizedAllToShardedLinear", "QuantizedShardedToAllLinear")
    if hasattr(mlx.nn, name)
)


class _OurProduct:
    """The kernel choice every layer here shares (plain attributes, not parameters)."""

    # Where the layer sits in the model that replace_linear swapped it into:
    # errors raised by its product name it.
    _path: str | None = None

    def _use_kernel(self, kernel: str, deterministic: bool = False, precision: str = "float32"):
        self._product = ops.layer_product(kernel, precision=precision, deterministic=deterministic)
        self.kernel = kernel
        self.deterministic = deterministic
        self.precision = precision
        return self

    def _extra_repr(self) -> str:
        extra = ", deterministic=True" if self.deterministic else ""
        extra += f", precision={self.precision!r}" if self.precision != "float32" else ""
        return f"{super()._extra_repr()}, kernel={self.kernel!r}{extra}"

    def _local_product(self, x: mx.array) -> mx.array:
        """x @ W.T with W.T a transposed view, read in place."""
        try:
            return self._product(x, self["weight"])
        except (TypeError, ValueError) as e:
            if self._path is None:
                raise
            raise self._named(e) from e

    def _affine(self, x: mx.array) -> mx.array:
        """x @ W.T (+ bias). The product is made here, not by calling
        _local_product: a decode step makes ~30 of these, its time is the
        host's, and a Python call costs ~0.2 us of it on an H200's host
        (docs/performance-log.md, "A layer's product, its Python flattened")."""
        try:
            y = self._product(x, self["weight"])
        except (TypeError, ValueError) as e:
            if self._path is None:
                raise
            raise self._named(e) from e
        return y + self["bias"] if "bias" in self else y

    def _named(self, e: Exception) -> Exception:
        """``e`` again, its message naming where the layer sits in its model."""
        return type(e)(f"{self._path} ({type(self).__name__}), x @ weight.T: {e}")


class Linear(_OurProduct, mlx.nn.Linear):
    """``mlx.nn.Linear`` with its product on an mlx-sgemm kernel.

    Args:
        input_dims, output_dims, bias: as for ``mlx.nn.Linear``.
        kernel: ``"matmul"`` (default, the adaptive op) or a stage name
            (``"tile_simdgroup"``, ...).
        deterministic: run ``matmul(..., deterministic=True)``: each row's
            output the same whatever batch it comes in (the stage kernels
            always are).
        precision: ``matmul``'s: ``"float32"`` (default, float32-accurate) or
            ``"tf32"`` (one TF32 tensor-core pass on CUDA). MLX's own
            ``nn.Linear`` in float32 runs at TF32 on CUDA unless
            ``MLX_ENABLE_TF32=0``: ``"tf32"`` is the like-for-like setting.
            The stage kernels compute in float32 whatever is asked.

    Inputs and weights may be float32, float16 or bfloat16, like the ops'
    operands; the output has ``mx.matmul``'s dtype for them.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, kernel: str = "matmul",
                 deterministic: bool = False, precision: str = "float32"):
        super().__init__(input_dims, output_dims, bias=bias)
        self._use_kernel(kernel, deterministic, precision)

    @classmethod
    def from_linear(cls, linear: mlx.nn.Linear, kernel: str = "matmul", deterministic: bool = False,
                    precision: str = "float32") -> "Linear":
        """A Linear sharing ``linear``'s weight and bias arrays."""
        output_dims, input_dims = linear.weight.shape
        layer = cls(input_dims, output_dims, bias="bias" in linear, kernel=kernel, deterministic=deterministic,
                    precision=precision)
        layer.update(dict(linear.parameters()))
        return layer

    # The layer is its affine map (one Python call fewer than a __call__ that calls it).
    __call__ = _OurProduct._affine


class _ShardedProduct(_OurProduct):
    """Constructor and ``from_linear`` of MLX's sharded layers, plus ``kernel``,
    ``deterministic`` and ``precision`` (see :class:`Linear`)."""

    def __init__(self, input_dims, output_dims, bias=True, group=None, kernel: str = "matmul",
                 deterministic: bool = False, precision: str = "float32"):
        super().__init__(input_dims, output_dims, bias, group)
        self._use_kernel(kernel, deterministic, precision)

    @classmethod
    def from_linear(cls, linear_layer, *, segments=1, group=None, kernel: str = "matmul",
                    deterministic: bool = False, precision: str = "float32"):
        layer = super().from_linear(linear_layer, segments=segments, group=group)
        return layer._use_kernel(kernel, deterministic, precision)


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
        y = mx.distributed.all_sum(self._local_product(x), group=self.group)
        return y + self["bias"] if "bias" in self else y


_LINEAR = (mlx.nn.Linear, mlx.nn.AllToShardedLinear, mlx.nn.ShardedToAllLinear)


def _ours(module: mlx.nn.Module, kernel: str, deterministic: bool, precision: str):
    """Our layer for one of MLX's, sharing its parameters (and group)."""
    if isinstance(module, mlx.nn.AllToShardedLinear):
        out_shard, in_dims = module.weight.shape
        layer = AllToShardedLinear(in_dims, out_shard * module.group.size(), "bias" in module,
                                   module.group, kernel, deterministic, precision)
    elif isinstance(module, mlx.nn.ShardedToAllLinear):
        out_dims, in_shard = module.weight.shape
        layer = ShardedToAllLinear(in_shard * module.group.size(), out_dims, "bias" in module,
                                   module.group, kernel, deterministic, precision)
    else:
        out_dims, in_dims = module.weight.shape
        layer = Linear(in_dims, out_dims, "bias" in module, kernel, deterministic, precision)
    layer.update(dict(module.parameters()))
    return layer


def _cannot_serve(module: mlx.nn.Module) -> str | None:
    """Why replace_linear leaves a linear layer of MLX's as it is, or None."""
    if isinstance(module, _QUANTIZED):
        return "its weights are quantized; mlx-sgemm's kernels multiply float arrays"
    if isinstance(module, _LINEAR) and module.weight.dtype not in OPERAND_DTYPES:
        return (f"its weight is {dtype_name(module.weight.dtype)}; "
                f"mlx-sgemm takes {', '.join(map(dtype_name, OPERAND_DTYPES))}")
    return None


def replace_linear(model: mlx.nn.Module, kernel: str = "matmul", *, deterministic: bool = False,
                   precision: str = "float32") -> mlx.nn.Module:
    """Swap every ``mlx.nn.Linear`` of ``model`` for :class:`Linear`, in place,
    and MLX's ``AllToShardedLinear`` / ``ShardedToAllLinear`` for ours.

    The new layers share the old ones' parameter arrays (and group); layers
    already ours are left as they are. Linear layers we cannot serve are left
    as they are too, each logged at INFO on the ``mlx_sgemm`` logger with its
    path and the reason: quantized ones (``mlx.nn.QuantizedLinear`` and its
    kin) and those whose weight is not float32, float16 or bfloat16. An error
    raised when a swapped layer is called (an input of the wrong dtype or
    shape, say) names the layer's path in ``model``. ``deterministic`` and
    ``precision`` are passed to every new layer (see :class:`Linear`).
    Returns ``model``.
    """
    ops.op_by_name(kernel, precision, deterministic)  # bad arguments fail before anything changes

    def swap(path, module):
        if isinstance(module, _OurProduct):
            return module
        reason = _cannot_serve(module)
        if reason is not None:
            log.info("replace_linear left %s (%s) as it is: %s", path, type(module).__name__, reason)
            return module
        if not isinstance(module, _LINEAR):
            return module
        layer = _ours(module, kernel, deterministic, precision)
        layer._path = path
        return layer

    leaves = tree_map_with_path(swap, model.leaf_modules(), is_leaf=mlx.nn.Module.is_module)
    model.update_modules(leaves)
    return model
