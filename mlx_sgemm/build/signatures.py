"""The complete kernel sources MLX builds around our bodies, written out in Python.

``mx.fast.metal_kernel`` and ``mx.fast.cuda_kernel`` take only a body and a header
and write the signature themselves, in C++ (``write_signature`` in
mlx/backend/common/metal_kernel.cpp, ``build_kernel`` in
mlx/backend/cuda/custom_kernel.cpp, MLX 0.32). These are line-for-line ports, so
that the checks that run without a GPU (the Metal CPU harness, the nvcc compile
check) compile exactly what MLX would compile. Their input is a
:class:`~mlx_sgemm.build.specs.KernelSpec`, the same object the registry hands to MLX.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .specs import KernelSpec

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

# MLX's type names for the dtypes we pass: get_type_string (Metal's types, and
# a dtype template argument's part of a CUDA kernel's name; MLX's Metal prelude
# defines float16_t and bfloat16_t) and dtype_to_cuda_type (CUDA's types, from
# cuda_fp16.h / cuda_bf16.h, which MLX's device header includes).
_TYPE_STRINGS = {"float32": "float", "float16": "float16_t", "bfloat16": "bfloat16_t",
                 "int32": "int32_t", "int64": "int64_t", "int8": "int8_t"}
_CUDA_TYPES = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16",
               "int32": "int32_t", "int64": "int64_t", "int8": "int8_t"}

CUDA_DEFAULT_HEADER = """
#include "mlx/backend/cuda/device/utils.cuh"

#include <cooperative_groups.h>

"""


@dataclass(frozen=True)
class ArrayInfo:
    """What the signature depends on for one input: its dtype, rank and size."""

    dtype: str  # "float32", "int32", ...
    ndim: int
    size: int


def shape_infos(spec: KernelSpec) -> list[tuple[bool, bool, bool]]:
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
    return str(int(value)) if isinstance(value, bool) else str(value)


def metal_kernel_name(spec: KernelSpec, inputs: list[ArrayInfo]) -> str:
    name = "custom_kernel_" + spec.name
    if spec.template:
        # MLX's make_template_hash turns "<16, 4>" into "_16_4" and appends it
        # after another "_": hence the double underscore.
        name += "__" + "_".join(_template_value(v) for _, v in spec.template)
    for info in inputs:
        name += "_" + _TYPE_STRINGS[info.dtype]
        if info.ndim == 0:
            name += "s"
        elif info.size < METAL_MAX_CONSTANT_ARRAY_SIZE:
            name += "c"
    name += "_float" * len(spec.output_names)
    return name


def metal_source(spec: KernelSpec, inputs: list[ArrayInfo]) -> str:
    """The full Metal source MLX compiles for ``spec`` called on ``inputs``."""
    body = spec.compiled_source()
    infos = shape_infos(spec)
    name = metal_kernel_name(spec, inputs)
    out = spec.compiled_header()
    if spec.template:
        kinds = []
        for tname, value in spec.template:
            kinds.append(("bool " if isinstance(value, bool) else "int ") + tname)
        out += "template <" + ", ".join(kinds) + ">\n"
    out += f"[[kernel]] void {name}(\n"
    attributes = metal_attributes(body)
    index = 0
    for iname, info, (has_shape, has_strides, has_ndim) in zip(
        spec.input_names, inputs, infos
    ):
        location = "constant" if info.size < METAL_MAX_CONSTANT_ARRAY_SIZE else "device"
        ref = "&" if info.ndim == 0 else "*"
        out += f"  const {location} {_TYPE_STRINGS[info.dtype]}{ref} {iname} [[buffer({index})]],\n"
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
    for i, oname in enumerate(spec.output_names):
        out += f"  device float* {oname} [[buffer({index})]]"
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


def cuda_kernel_name(spec: KernelSpec) -> str:
    suffix = ""
    for _, value in spec.template_args:
        if isinstance(value, bool):
            suffix += "_t" if value else "_f"
        elif isinstance(value, str):  # a dtype
            suffix += "_" + _TYPE_STRINGS[value]
        else:
            suffix += f"_{value}"
    return "custom_kernel_" + spec.name + suffix


def cuda_source(spec: KernelSpec, inputs: list[ArrayInfo]) -> str:
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
