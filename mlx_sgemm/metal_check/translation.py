"""From the Metal source MLX generates to a C++ translation unit clang compiles.

The source is written by :func:`mlx_sgemm.build.signatures.metal_source`, the port
of MLX's ``write_signature`` (mlx/backend/common/metal_kernel.cpp): header,
template line, ``[[kernel]] void custom_kernel_<name>...(`` with the inputs
(``const device T*``, or ``constant`` below 8 elements, ``&`` for scalars),
their ``_shape`` / ``_strides`` / ``_ndim`` where the body names them, the
outputs, the thread-position attributes the body names, then the body and the
explicit instantiation. Only three things are done to that text, each keeping
the line count, so that every line of the unit is the line of the MLX source
with the same number (a ``#line`` directive names it):

* ``metal_compat.h`` is included in front (where MLX puts its Metal prelude);
* every ``threadgroup T name[dims];`` declaration becomes a reference to storage
  the runtime shares among the threads of a threadgroup (C++ has no such
  storage class);
* the ``[[host_name(...)]] [[kernel]]`` attributes of the explicit template
  instantiation are dropped (standard C++ allows no attributes there).

A generated launcher binds ``[[buffer(i)]]`` to the i-th buffer and each
thread-position attribute to its value, as the Metal runtime does.
"""

from __future__ import annotations

import dataclasses
import re

from mlx_sgemm.build import signatures

# The file name the unit gives the MLX source (#line): what the debug
# information and clang's diagnostics call it.
UNIT_FILE = "mlx_kernel.metal"

# Attributes a kernel may use: Metal's that MLX writes, and plain C++ ones.
_ALLOWED_ATTRIBUTES = {
    "kernel", "maybe_unused", "likely", "unlikely", "fallthrough", "buffer", "host_name",
    *(name for name, _ in signatures.METAL_ATTRIBUTES),
}

_TG_DECL = re.compile(
    r"^(?P<indent>[ \t]*)threadgroup\s+(?P<type>[A-Za-z_][\w:]*(?:\s*<[^;{}]*?>)?)\s+"
    r"(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\];]+\]\s*)*);",
    re.MULTILINE,
)
_INSTANTIATION = re.compile(
    r'^template \[\[host_name\("(?P<host>\w+)"\)\]\] \[\[kernel\]\] '
    r"decltype\((?P<decl>[^)]+)\) (?P=decl);$",
    re.MULTILINE,
)
_BUFFER_PARAM = re.compile(
    r"^\s*(?P<type>(?:const )?(?:device|constant) [\w:<>]+)(?P<ref>[*&]) (?P<name>\w+) "
    r"\[\[buffer\((?P<index>\d+)\)\]\]"
)
_ATTRIBUTE_PARAM = re.compile(r"^\s*(?P<type>u?int3?) (?P<name>\w+) \[\[(?P<attr>\w+)\]\]")
_ATTRIBUTE_USE = re.compile(r"\[\[\s*([^\]]*?)\s*\]\]")


class Unsupported(Exception):
    """The kernel uses something the checker does not model."""


@dataclasses.dataclass(frozen=True)
class SourceFiles:
    """Where the header and the body of an MLX source came from, to name
    lines by: line i (from 1) of the body is line ``body_first_line + i - 1``
    of the file ``body`` (the string may stand inside a larger file, a Python
    module's), unless ``body_origins`` names each line's file and line (a text
    assembled from several files, comments and blank lines taken out: this
    package's kernels, :func:`mlx_sgemm.build.sources.compiled_origins`). The
    same for the header."""

    body: str = "source"
    header: str = "header"
    body_first_line: int = 1
    header_first_line: int = 1
    body_origins: tuple[tuple[str, int], ...] | None = None
    header_origins: tuple[tuple[str, int], ...] | None = None

    def body_line(self, i: int) -> tuple[str, int]:
        if self.body_origins is not None and 0 < i <= len(self.body_origins):
            return self.body_origins[i - 1]
        return self.body, self.body_first_line + i - 1

    def header_line(self, i: int) -> tuple[str, int]:
        if self.header_origins is not None and 0 < i <= len(self.header_origins):
            return self.header_origins[i - 1]
        return self.header, self.header_first_line + i - 1


@dataclasses.dataclass(frozen=True)
class Program:
    """A kernel ready to compile: the translation unit and what the runner binds."""

    name: str
    mlx_source: str  # exactly what MLX compiles
    unit: str  # what clang compiles
    buffers: int  # number of [[buffer(i)]] parameters
    header_lines: int  # lines 1..header_lines of mlx_source are the header's
    body_start: int  # the body's first line in mlx_source
    body_lines: int
    files: SourceFiles | None = None  # None: name lines of the MLX source itself

    def source_line(self, line: int) -> str:
        lines = self.mlx_source.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def locate(self, line: int) -> tuple[str, int]:
        """(file, line) of a line of the MLX source: the user's header or body
        file where it came from one, else the generated source."""
        if self.files is not None:
            if 0 < line <= self.header_lines:
                return self.files.header_line(line)
            if self.body_start <= line < self.body_start + self.body_lines:
                return self.files.body_line(line - self.body_start + 1)
        return f"{self.name}.metal (as MLX generates it)", line


def _check_attributes(source: str) -> None:
    for attr in _ATTRIBUTE_USE.findall(source):
        word = attr.split("(")[0].strip()
        if word not in _ALLOWED_ATTRIBUTES:
            raise Unsupported(f"the Metal checker does not model the attribute [[{attr}]]")


def _rewrite_threadgroup_declarations(source: str) -> str:
    counter = iter(range(1 << 30))

    def rewrite(m: re.Match) -> str:
        t, dims = m["type"], m["dims"].strip()
        return (
            f"{m['indent']}threadgroup {t} (&{m['name']}){dims} = "
            f"metal_harness::threadgroup_var<{t}{dims}, {next(counter)}>(\"{m['name']}\");"
        )

    return _TG_DECL.sub(rewrite, source)


def _launcher(source: str, name: str) -> tuple[str, int]:
    """The C++ function that calls the kernel the way Metal binds its arguments."""
    start = source.index(f"[[kernel]] void {name}(\n")
    end = source.index(") {\n", start)
    params = source[start:end].splitlines()[1:]
    args, buffers = [], 0
    for param in params:
        param = param.rstrip(",")
        if m := _BUFFER_PARAM.match(param):
            index = int(m["index"])
            if index != buffers:
                raise ValueError(f"buffer indices out of order in {param!r}")
            buffers += 1
            pointer = f"({m['type']}*)buffers[{index}]"
            args.append(pointer if m["ref"] == "*" else f"*{pointer}")
        elif m := _ATTRIBUTE_PARAM.match(param):
            if m["name"] != m["attr"]:
                raise ValueError(f"attribute parameter not named after its attribute: {param!r}")
            value = f"attrs->{m['attr']}"
            args.append(f"metal_harness::attr3({value})" if m["type"].endswith("3") else value)
        else:
            raise ValueError(f"cannot bind kernel parameter {param!r}")
    inst = _INSTANTIATION.search(source)
    callee = inst["decl"] if inst else name
    body = ",\n      ".join(args)
    code = (
        f'extern "C" const int mh_buffer_count = {buffers};\n'
        'extern "C" void mh_launch(void* const* buffers, const mh_attrs* attrs) {\n'
        f"  (void)buffers;\n  (void)attrs;\n  {callee}(\n      {body});\n}}\n"
    )
    return code, buffers


def _files_of(kernel) -> SourceFiles | None:
    """The files and lines of a kernel whose text was assembled from files
    (``line_origins()``), when they account for every compiled line."""
    header, body = kernel.line_origins()
    if (len(header) != kernel.compiled_header().count("\n")
            or len(body) != kernel.compiled_source().count("\n")):
        return None
    return SourceFiles(body_origins=body, header_origins=header)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def program(
    kernel: signatures.KernelText, inputs: list[signatures.ArrayInfo],
    files: SourceFiles | None = None,
) -> Program:
    """The translation unit for ``kernel`` called on arrays like ``inputs``."""
    mlx_source = signatures.metal_source(kernel, inputs)
    name = signatures.metal_kernel_name(kernel, inputs)
    if files is None and hasattr(kernel, "line_origins"):  # this package's kernels
        files = _files_of(kernel)
    _check_attributes(mlx_source)
    text = _rewrite_threadgroup_declarations(mlx_source)
    if kernel.template:
        text, n = _INSTANTIATION.subn(r"template decltype(\g<decl>) \g<decl>;", text)
        if n != 1:
            raise ValueError("explicit instantiation not in the form MLX writes")
    launcher, buffers = _launcher(mlx_source, name)
    if not text.endswith("\n"):
        text += "\n"
    unit = (
        '#include "metal_compat.h"\n'
        f'#line 1 "{UNIT_FILE}"\n'
        f"{text}"
        '#line 1 "launcher"\n'
        f"{launcher}"
    )
    signature = mlx_source.index(f"[[kernel]] void {name}(\n")
    body_start = _line_of(mlx_source, mlx_source.index(") {\n", signature)) + 1
    header = kernel.compiled_header()
    return Program(
        name=kernel.name, mlx_source=mlx_source, unit=unit, buffers=buffers,
        header_lines=header.count("\n"), body_start=body_start,
        body_lines=kernel.compiled_source().count("\n") + 1, files=files,
    )
