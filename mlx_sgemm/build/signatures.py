"""The complete kernel sources MLX builds around our bodies, written out in Python.

``mx.fast.metal_kernel`` and ``mx.fast.cuda_kernel`` take only a body and a header
and write the signature themselves, in C++ (``write_signature`` in
mlx/backend/common/metal_kernel.cpp, ``build_kernel`` in
mlx/backend/cuda/custom_kernel.cpp, MLX 0.32). These are line-for-line ports, so
that the checks that run without a GPU (the Metal CPU harness, the nvcc compile
check) compile exactly what MLX would compile. Their input is a
:class:`~mlx_sgemm.build.specs.KernelSpec`, the same object the registry hands to MLX,
or anything else that describes a kernel the same way (:class:`KernelText`: the
Metal checker describes any user's ``mx.fast.metal_kernel`` with one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

# Inputs with fewer elements than this are passed in Metal's constant address space.
METAL_MAX_CONSTANT_ARRAY_SIZE = 8

# MLX's list of Metal thread-position attributes and their types; an attribute is
# added to the signature when its name appears anywhere in the body.
METAL_ATTRIBUTES = (
    ("dispatch_quadgroups_per_threadgroup", "uint"),
    ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"),
    ("grid_origin", "uint3"),
    ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"),
    ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"),
    ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"),
    ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"),
    ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"),
    ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"),
    ("threadgroups_per_grid", "uint3"),
    ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"),
    ("threads_per_threadgroup", "uint3"),
)

# MLX's type names (get_type_string in mlx/backend/common/compiled.cpp) for
# Metal, by dtype name; and (dtype_to_cuda_type) for the dtypes we pass to CUDA.
METAL_TYPES = {
    "float32": "float", "float16": "float16_t", "bfloat16": "bfloat16_t", "float64": "double",
    "complex64": "complex64_t", "bool": "bool", "int8": "int8_t", "int16": "int16_t",
    "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t",
    "uint32": "uint32_t", "uint64": "uint64_t",
}
# MLX's dtype_to_cuda_type, for the dtypes we pass to CUDA (half types from
# cuda_fp16.h / cuda_bf16.h, which MLX's device header includes). A dtype
# template argument's part of a CUDA kernel's name is METAL_TYPES' string.
_CUDA_TYPES = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16",
               "int32": "int32_t", "int64": "int64_t", "int8": "int8_t"}

CUDA_DEFAULT_HEADER = """
#include "mlx/backend/cuda/device/utils.cuh"

#include <cooperative_groups.h>

"""


class KernelText(Protocol):
    """What a signature is written from: a :class:`~mlx_sgemm.build.specs.KernelSpec`,
    or the arguments of any ``mx.fast.metal_kernel`` (``mlx_sgemm.metal_check.kernel``).
    ``template`` holds (name, value) pairs, a value an int, a bool or a :class:`TypeArg`.
    Optional: ``output_dtypes`` (dtype names; empty or absent: every output
    float32, as all of this package's Metal kernels) and ``atomic_outputs``
    (``device atomic<T>*`` outputs, MLX's option of that name)."""

    @property
    def name(self) -> str: ...
    @property
    def input_names(self) -> tuple[str, ...]: ...
    @property
    def output_names(self) -> tuple[str, ...]: ...
    @property
    def template(self) -> tuple: ...
    def compiled_source(self) -> str: ...
    def compiled_header(self) -> str: ...


@dataclass(frozen=True)
class TypeArg:
    """A template argument that is a type (MLX takes a Dtype there): its dtype name."""

    dtype: str


@dataclass(frozen=True)
class ArrayInfo:
    """What the signature depends on for one input: its dtype, rank and size."""

    dtype: str  # "float32", "int32", ...
    ndim: int
    size: int


def shape_infos(spec: KernelText) -> list[tuple[bool, bool, bool]]:
    """For each input: does the body name ``<input>_shape``, ``_strides``, ``_ndim``?"""
    body = spec.compiled_source()
    return [
        (f"{n}_shape" in body, f"{n}_strides" in body, f"{n}_ndim" in body)
        for n in spec.input_names
    ]


def metal_attributes(body: str) -> list[str]:
    return [f"  {t} {attr} [[{attr}]]" for attr, t in METAL_ATTRIBUTES if attr in body]


def _template_value(value) -> str:
    # MLX streams a bool through std::ostream, which writes 1/0.
    if isinstance(value, TypeArg):
        return METAL_TYPES[value.dtype]
    return str(int(value)) if isinstance(value, bool) else str(value)


def _template_kind(value) -> str:
    return "typename" if isinstance(value, TypeArg) else "bool" if isinstance(value, bool) else "int"


def metal_kernel_name(spec: KernelText, inputs: list[ArrayInfo]) -> str:
    name = "custom_kernel_" + spec.name
    if spec.template:
        # MLX's make_template_hash turns "<16, 4>" into "_16_4" and appends it
        # after another "_": hence the double underscore.
        name += "__" + "_".join(_template_value(v) for _, v in spec.template)
    for info in inputs:
        name += "_" + METAL_TYPES[info.dtype]
        if info.ndim == 0:
            name += "s"
        elif info.size < METAL_MAX_CONSTANT_ARRAY_SIZE:
            name += "c"
    for dtype in _output_dtypes(spec):
        name += "_" + METAL_TYPES[dtype]
    return name


def _output_dtypes(spec: KernelText) -> tuple[str, ...]:
    return tuple(getattr(spec, "output_dtypes", ()) or ("float32",) * len(spec.output_names))


def metal_source(spec: KernelText, inputs: list[ArrayInfo]) -> str:
    """The full Metal source MLX compiles for ``spec`` called on ``inputs``."""
    body = spec.compiled_source()
    infos = shape_infos(spec)
    name = metal_kernel_name(spec, inputs)
    out = spec.compiled_header()
    if spec.template:
        kinds = [_template_kind(value) + " " + tname for tname, value in spec.template]
        out += "template <" + ", ".join(kinds) + ">\n"
    out += f"[[kernel]] void {name}(\n"
    attributes = metal_attributes(body)
    index = 0
    for iname, info, (has_shape, has_strides, has_ndim) in zip(
        spec.input_names, inputs, infos
    ):
        location = "constant" if info.size < METAL_MAX_CONSTANT_ARRAY_SIZE else "device"
        ref = "&" if info.ndim == 0 else "*"
        out += f"  const {location} {METAL_TYPES[info.dtype]}{ref} {iname} [[buffer({index})]],\n"
        index += 1
        if info.ndim > 0:
            if has_shape:
                out += f"  const constant int* {iname}_shape [[buffer({index})]],\n"
                index += 1
            if has_strides:
                out += f"  const constant int64_t* {iname}_strides [[buffer({index})]],\n"
                index += 1
            if has_ndim:
                out += f"  const constant int& {iname}_ndim [[buffer({index})]],\n"
                index += 1
    for oname, dtype in zip(spec.output_names, _output_dtypes(spec)):
        element = METAL_TYPES[dtype]
        if getattr(spec, "atomic_outputs", False):
            element = f"atomic<{element}>"
        out += f"  device {element}* {oname} [[buffer({index})]]"
        # MLX compares the running buffer index with inputs + outputs - 1 (not
        # counting the shape buffers); kept as is so the text matches.
        if index < len(inputs) + len(spec.output_names) - 1 or attributes:
            out += ",\n"
        else:
            out += ") {\n"
        index += 1
    for i, attr in enumerate(attributes):
        out += attr + (",\n" if i < len(attributes) - 1 else ") {\n")
    out += body + "\n}\n"
    if spec.template:
        targs = "<" + ", ".join(_template_value(v) for _, v in spec.template) + ">"
        decl = name + targs
        out += (
            f'\ntemplate [[host_name("{name}")]] [[kernel]] decltype({decl}) {decl};\n'
        )
    return out


def cuda_kernel_name(spec: KernelText) -> str:
    suffix = ""
    for _, value in spec.template_args:
        if isinstance(value, bool):
            suffix += "_t" if value else "_f"
        elif isinstance(value, str):  # a dtype
            suffix += "_" + METAL_TYPES[value]
        else:
            suffix += f"_{value}"
    return "custom_kernel_" + spec.name + suffix


def cuda_source(spec: KernelText, inputs: list[ArrayInfo]) -> str:
    """The full CUDA source MLX compiles (with NVRTC) for ``spec`` on ``inputs``."""
    infos = shape_infos(spec)
    out = CUDA_DEFAULT_HEADER + spec.compiled_header()
    out += "namespace mlx::core::cu {\n\nnamespace cg = cooperative_groups;\n\n"
    out += f"__global__ void {cuda_kernel_name(spec)}(\n"
    for iname, info, (has_shape, has_strides, has_ndim) in zip(
        spec.input_names, inputs, infos
    ):
        out += f"    const {_CUDA_TYPES[info.dtype]}* {iname},\n"
        if info.ndim > 0:
            if has_shape:
                out += f"    const __grid_constant__ Shape {iname}_shape,\n"
            if has_strides:
                out += f"    const __grid_constant__ Strides {iname}_strides,\n"
            if has_ndim:
                out += f"    const __grid_constant__ int {iname}_ndim,\n"
    output_dtypes = spec.output_dtypes or ("float32",) * len(spec.output_names)
    for i, (oname, dtype) in enumerate(zip(spec.output_names, output_dtypes)):
        out += f"    {_CUDA_TYPES[dtype]}* {oname}"
        out += ",\n" if i < len(spec.output_names) - 1 else ") {\n"
    if spec.template_args:
        for tname, value in spec.template_args:
            if isinstance(value, bool):
                out += f"  constexpr bool {tname} = {'true' if value else 'false'};\n"
            elif isinstance(value, str):  # a dtype
                out += f"  using {tname} = {_CUDA_TYPES[value]};\n"
            else:
                out += f"  constexpr int {tname} = {value};\n"
        out += "\n"
    out += spec.compiled_source()
    out += "\n}\n\n} // namespace mlx::core::cu\n"
    return out


def declared_infos(spec: KernelSpec, size: int = 4096) -> list[ArrayInfo]:
    """ArrayInfo for a kernel that declares its input dtypes (KernelSpec.input_dtypes),
    each a 1-D array of ``size`` elements (the signature depends on no more)."""
    return [ArrayInfo(dtype, 1, size) for dtype in spec.input_dtypes]


def operand_infos(spec: KernelSpec, a_shape, b_shape, params_len: int) -> list[ArrayInfo]:
    """ArrayInfo for a launch of ``spec``'s three inputs: a and b of the
    spec's element types, int32 params."""
    a_type, b_type = spec.operand_types
    return [
        ArrayInfo(a_type, len(a_shape), math.prod(a_shape)),
        ArrayInfo(b_type, len(b_shape), math.prod(b_shape)),
        ArrayInfo("int32", 1, params_len),
    ]
