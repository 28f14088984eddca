"""Compile a Metal kernel as MLX would hand it to Apple's compiler, and run it on the CPU.

The source is built by :func:`mlx_sgemm.build.signatures.metal_source` from the same
:class:`~mlx_sgemm.build.specs.KernelSpec` the registry gives ``mx.fast.metal_kernel``,
the launch is shaped by :func:`mlx_sgemm.dispatch.problem.plan` as in ``launcher.launch``, and
the buffers are bound in the order MLX's ``CustomKernel::eval_gpu`` binds them.
Only three things are done to the text before clang sees it, each keeping the
line count, so that line numbers in errors are lines of the MLX source:

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

import atexit
import dataclasses
import hashlib
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from mlx_sgemm.build import signatures
from mlx_sgemm.build.specs import KernelSpec
from mlx_sgemm.dispatch.problem import Plan, plan

HERE = Path(__file__).resolve().parent
COMPAT_HEADER = HERE / "metal_compat.h"
RUNTIME_SOURCES = (HERE / "runtime.cpp", HERE / "runtime.h", HERE / "async_copy.cpp")

CXXFLAGS = [
    "-x", "c++", "-std=c++17", "-O1", "-fno-strict-aliasing",
    "-Wall", "-Wno-unknown-attributes", "-Wno-unused-variable",
    "-Wno-unused-but-set-variable", "-Wno-gnu-anonymous-struct", "-Wno-nested-anon-types",
    "-fno-sanitize=all",
]
# Indexing a fixed-size array (a threadgroup tile, a register tile) out of its
# bounds traps; the runtime reports the trap as out of bounds.
KERNEL_FLAGS = ["-fsanitize=array-bounds", "-fsanitize-trap=all"]

RUN_TIMEOUT_S = 120

# Attributes a kernel may use: Metal's that MLX writes, and plain C++ ones.
_ALLOWED_ATTRIBUTES = {
    "kernel", "maybe_unused", "likely", "unlikely", "fallthrough",
    *(name for name, _ in signatures.METAL_ATTRIBUTES),
}


class HarnessError(Exception):
    """The harness could not build or run the kernel (not a verdict on it)."""


class KernelError(Exception):
    """The kernel did something a GPU would not forgive. ``kind`` says what."""

    def __init__(self, kind: str, line: int, message: str, source_line: str = ""):
        self.kind = kind
        self.line = line
        self.message = message
        self.source_line = source_line
        where = f" at line {line}: {source_line.strip()}" if line and source_line else ""
        super().__init__(f"{kind}{where}: {message}")


class CompileError(KernelError):
    def __init__(self, message: str):
        super().__init__("compile", 0, message)


# ---- the compiler --------------------------------------------------------------


def compiler() -> list[str]:
    """The clang to use: $METAL_HARNESS_CXX, else PyPI's ziglang (zig cc is clang),
    else clang++ or clang on PATH. g++ will not do: Metal's address spaces need
    clang's address_space attribute."""
    env = os.environ.get("METAL_HARNESS_CXX")
    if env:
        return env.split()
    if importlib.util.find_spec("ziglang") is not None:
        return [sys.executable, "-m", "ziglang", "cc"]
    for name in ("clang++", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    raise HarnessError(
        "no clang found for the Metal CPU harness: `pip install ziglang` "
        "(or install clang, or set METAL_HARNESS_CXX)"
    )


_build_dir: Path | None = None


def build_dir() -> Path:
    """Where compiled runners are cached by source hash, for this process."""
    global _build_dir
    if _build_dir is None:
        _build_dir = Path(tempfile.mkdtemp(prefix="metal-harness-"))
        atexit.register(shutil.rmtree, _build_dir, True)
    return _build_dir


def _run_compiler(args: list[str]) -> None:
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(proc.stderr.strip() or proc.stdout.strip())


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:20]


INCLUDES = ["-I", str(HERE), "-I", str(HERE / "include")]


def _runtime_objects() -> list[Path]:
    """runtime.cpp (the scheduler) and async_copy.cpp, compiled once per process."""
    cc = compiler()
    key = _digest(
        " ".join(cc), *CXXFLAGS, *(p.read_bytes() for p in RUNTIME_SOURCES),
        COMPAT_HEADER.read_bytes(),
    )
    objects = []
    for name in ("runtime", "async_copy"):
        obj = build_dir() / f"{name}-{key}.o"
        if not obj.exists():
            _run_compiler([*cc, *CXXFLAGS, *INCLUDES, "-c", str(HERE / f"{name}.cpp"), "-o", str(obj)])
        objects.append(obj)
    return objects


# ---- from the MLX source to a C++ translation unit --------------------------------

_TG_DECL = re.compile(
    r"^(?P<indent>[ \t]*)threadgroup\s+(?P<type>[A-Za-z_][\w:]*(?:\s*<[^;{}]*?>)?)\s+"
    r"(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\];]+\]\s*)*);",
    re.M,
)
_INSTANTIATION = re.compile(
    r'^template \[\[host_name\("(?P<host>\w+)"\)\]\] \[\[kernel\]\] '
    r"decltype\((?P<decl>[^)]+)\) (?P=decl);$",
    re.M,
)
_BUFFER_PARAM = re.compile(
    r"^\s*(?P<type>(?:const )?(?:device|constant) [\w:]+)(?P<ref>[*&]) (?P<name>\w+) "
    r"\[\[buffer\((?P<index>\d+)\)\]\]"
)
_ATTRIBUTE_PARAM = re.compile(r"^\s*(?P<type>u?int3?) (?P<name>\w+) \[\[(?P<attr>\w+)\]\]")
_ATTRIBUTE_USE = re.compile(r"\[\[\s*([^\]]*?)\s*\]\]")


@dataclasses.dataclass(frozen=True)
class Program:
    """A kernel ready to compile: the translation unit and what the runner binds."""

    name: str
    mlx_source: str  # exactly what MLX compiles
    unit: str  # what clang compiles
    buffers: int  # number of [[buffer(i)]] parameters

    def source_line(self, line: int) -> str:
        lines = self.mlx_source.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""


def _check_attributes(source: str) -> None:
    for attr in _ATTRIBUTE_USE.findall(source):
        word = attr.split("(")[0].strip()
        if word in _ALLOWED_ATTRIBUTES or word in ("buffer", "host_name"):
            continue
        raise KernelError(
            "unsupported", 0, f"the Metal CPU harness does not model the attribute [[{attr}]]"
        )


def _rewrite_threadgroup_declarations(source: str) -> str:
    counter = iter(range(1 << 30))

    def rewrite(m: re.Match) -> str:
        t, dims = m["type"], m["dims"].strip()
        return (
            f"{m['indent']}threadgroup {t} (&{m['name']}){dims} = "
            f"metal_harness::threadgroup_var<{t}{dims}, {next(counter)}>();"
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
                raise HarnessError(f"buffer indices out of order in {param!r}")
            buffers += 1
            pointer = f"({m['type']}*)buffers[{index}]"
            args.append(pointer if m["ref"] == "*" else f"*{pointer}")
        elif m := _ATTRIBUTE_PARAM.match(param):
            if m["name"] != m["attr"]:
                raise HarnessError(f"attribute parameter not named after its attribute: {param!r}")
            value = f"attrs->{m['attr']}"
            args.append(f"metal_harness::attr3({value})" if m["type"].endswith("3") else value)
        else:
            raise HarnessError(f"cannot bind kernel parameter {param!r}")
    inst = _INSTANTIATION.search(source)
    callee = inst["decl"] if inst else name
    body = ",\n      ".join(args)
    code = (
        'extern "C" const int mh_buffer_count = %d;\n'
        'extern "C" void mh_launch(void* const* buffers, const mh_attrs* attrs) {\n'
        "  (void)buffers;\n  (void)attrs;\n  %s(\n      %s);\n}\n" % (buffers, callee, body)
    )
    return code, buffers


def program(spec: KernelSpec, inputs: list[signatures.ArrayInfo]) -> Program:
    """The translation unit for ``spec`` called on arrays like ``inputs``."""
    mlx_source = signatures.metal_source(spec, inputs)
    name = signatures.metal_kernel_name(spec, inputs)
    _check_attributes(mlx_source)
    text = _rewrite_threadgroup_declarations(mlx_source)
    if spec.template:
        text, n = _INSTANTIATION.subn(r"template decltype(\g<decl>) \g<decl>;", text)
        if n != 1:
            raise HarnessError("explicit instantiation not in the form MLX writes")
    launcher, buffers = _launcher(mlx_source, name)
    if not text.endswith("\n"):
        text += "\n"
    unit = (
        '#include "metal_compat.h"\n'
        f'#line 1 "{spec.name}.metal"\n'
        f"{text}"
        '#line 1 "launcher"\n'
        f"{launcher}"
    )
    return Program(spec.name, mlx_source, unit, buffers)


def build(prog: Program) -> Path:
    """Compile and link ``prog`` once per process (cached by the source's hash)."""
    cc = compiler()
    runtime = _runtime_objects()
    key = _digest(
        " ".join(cc), *CXXFLAGS, *KERNEL_FLAGS, prog.unit, COMPAT_HEADER.read_bytes(),
        *(obj.name for obj in runtime),
    )
    exe = build_dir() / f"{prog.name}-{key}"
    if exe.exists():
        return exe
    src = build_dir() / f"{prog.name}-{key}.cpp"
    src.write_text(prog.unit)
    obj = src.with_suffix(".o")
    _run_compiler([*cc, *CXXFLAGS, *KERNEL_FLAGS, *INCLUDES, "-c", str(src), "-o", str(obj)])
    _run_compiler([*cc, str(obj), *map(str, runtime), "-o", str(exe)])
    return exe


# ---- running a dispatch --------------------------------------------------------------


@dataclasses.dataclass
class Buffer:
    name: str
    data: np.ndarray | None  # None for an output
    nbytes: int
    offset: int = 0  # bytes from the buffer's start to where the kernel's pointer points


_ERROR = re.compile(r"^METAL_HARNESS_ERROR (?P<kind>\w+) line=(?P<line>\d+): (?P<msg>.*)$", re.M)
_STATS = re.compile(r"^METAL_HARNESS_STATS (?P<stats>.*)$", re.M)


def dispatch(
    prog: Program,
    buffers: list[Buffer],
    grid: tuple[int, int, int],
    threadgroup: tuple[int, int, int],
    *,
    seed: int = 0,
    align_end: bool = True,
    stats: dict[str, int] | None = None,
) -> list[bytes]:
    """Run one dispatchThreads of ``prog``; returns the output buffers' bytes.

    ``align_end`` puts each buffer's end against a guard page (catching reads and
    writes past the end at once); False puts the start there instead. ``stats``,
    if given, receives the runner's counts (``async_copies``: simdgroup async
    copies issued).
    """
    if len(buffers) != prog.buffers:
        raise HarnessError(f"{prog.name} binds {prog.buffers} buffers, got {len(buffers)}")
    exe = build(prog)
    with tempfile.TemporaryDirectory(dir=build_dir()) as tmp:
        job, out = Path(tmp) / "job", Path(tmp) / "out"
        with open(job, "wb") as f:
            f.write(b"MHJOB002")
            f.write(struct.pack("<9Q", *grid, *threadgroup, seed, int(align_end), len(buffers)))
            for b in buffers:
                f.write(b.name.encode()[:31].ljust(32, b"\0"))
                f.write(struct.pack("<3Q", b.data is None, b.nbytes, b.offset))
                if b.data is not None:
                    f.write(np.ascontiguousarray(b.data).tobytes())
        try:
            proc = subprocess.run(
                [str(exe), str(job), str(out)], capture_output=True, text=True,
                timeout=RUN_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            raise KernelError("timeout", 0, f"no result after {RUN_TIMEOUT_S} s") from e
        if proc.returncode != 0:
            m = _ERROR.search(proc.stderr)
            if m:
                line = int(m["line"])
                raise KernelError(m["kind"], line, m["msg"], prog.source_line(line))
            raise KernelError(
                "crash", 0, f"runner exited with status {proc.returncode}: {proc.stderr[-2000:]}"
            )
        data = out.read_bytes()
    if stats is not None:
        m = _STATS.search(proc.stderr)
        if not m:
            raise HarnessError(f"the runner reported no statistics: {proc.stderr[-2000:]}")
        for item in m["stats"].split():
            key, value = item.split("=")
            stats[key] = int(value)
    outputs, offset = [], 0
    for b in buffers:
        if b.data is None:
            outputs.append(data[offset : offset + b.nbytes])
            offset += b.nbytes
    return outputs


def strided_buffer(name: str, view: np.ndarray) -> tuple[Buffer, list[int]]:
    """The buffer MLX binds for an array of any strides, and the strides it passes.

    MLX binds the array's buffer at the array's own offset, so the kernel's
    pointer is element (0, ..., 0), and passes ``<name>_strides`` in elements:
    a transposed view, a slice (negative steps too) or a broadcast (stride 0)
    arrives as it is. Here the buffer holds exactly the span of memory the view
    can address, from its lowest to its highest element, so the guard pages sit
    against the first (``align_end=False``) or last element: a read of anything
    the view does not contain either faults or, in the gaps between a slice's
    rows, reads NaN (what lies there is not the kernel's to read).
    """
    view = np.asarray(view)
    item = view.itemsize
    if any(st % item for st in view.strides):
        raise HarnessError(f"{name}: strides {view.strides} are not whole elements")
    strides = [st // item for st in view.strides]
    lo = sum(st * (n - 1) for st, n in zip(strides, view.shape) if st < 0)
    hi = sum(st * (n - 1) for st, n in zip(strides, view.shape) if st > 0)
    gap = np.nan if view.dtype.kind == "f" else -1
    flat = np.full(hi - lo + 1, gap, dtype=view.dtype)
    np.lib.stride_tricks.as_strided(flat[-lo:], view.shape, view.strides)[...] = view
    return Buffer(name, flat, flat.nbytes, offset=-lo * item), strides


def launch_inputs(
    spec: KernelSpec, a: np.ndarray, b: np.ndarray, *, c: np.ndarray | None = None,
    alpha: float = 1.0, beta: float = 0.0, k_splits: int = 1,
) -> tuple[Plan, list[np.ndarray]]:
    """The plan of ``a @ b`` and the kernel's inputs, in ``spec.input_names`` order.

    ``a`` and ``b`` keep their strides (NumPy views stay views, as MLX passes
    arrays to kernels that take any layout). A spec whose inputs include
    ``c_in`` and ``scalars`` computes ``alpha * a @ b + beta * c``; ``c`` (zeros
    if None) is broadcast to the result's shape and made row-contiguous, as the
    Python side does.
    """
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    p = plan(a.shape, b.shape)
    if p.empty:
        raise HarnessError("an empty product launches no kernel")
    # A view where NumPy can make one (merging batch dims of a strided view may
    # need a copy, as it does in MLX).
    arrays = {
        "a": a.reshape(p.a_shape),
        "b": b.reshape(p.b_shape),
        "params": np.asarray(p.params(spec.block_m, spec.block_n, k_splits), dtype=np.int32),
    }
    if "c_in" in spec.input_names:
        c_full = np.zeros(p.out_shape, np.float32) if c is None else np.broadcast_to(
            np.asarray(c, dtype=np.float32), p.out_shape)
        arrays["c_in"] = np.ascontiguousarray(c_full).reshape(p.kernel_out_shape())
        arrays["scalars"] = np.asarray([alpha, beta], dtype=np.float32)
    elif c is not None or alpha != 1.0 or beta != 0.0:
        raise HarnessError(f"{spec.stage} computes a @ b only: no c, alpha or beta")
    return p, [arrays[name] for name in spec.input_names]


def array_infos(inputs: list[np.ndarray]) -> list[signatures.ArrayInfo]:
    """What MLX's signature depends on (dtype, rank, logical size) for each input."""
    return [signatures.ArrayInfo(str(x.dtype), x.ndim, x.size) for x in inputs]


def matmul(
    spec: KernelSpec, a: np.ndarray, b: np.ndarray, *, c: np.ndarray | None = None,
    alpha: float = 1.0, beta: float = 0.0, seed: int = 0, align_end: bool = True,
    stats: dict[str, int] | None = None, k_splits: int = 1,
) -> np.ndarray:
    """``a @ b`` with a Metal kernel on the CPU, launched as ``mlx_sgemm.launcher.launch`` does.

    Operands of any strides are bound as MLX binds them (see
    :func:`strided_buffer`); ``c``, ``alpha``, ``beta``: see
    :func:`launch_inputs`; ``stats``: see :func:`dispatch`; ``k_splits``: K
    split that many ways, the partial products summed here (as launcher.launch does).
    """
    p, inputs = launch_inputs(spec, a, b, c=c, alpha=alpha, beta=beta, k_splits=k_splits)
    prog = program(spec, array_infos(inputs))
    # The binding order of CustomKernel::eval_gpu: each input, then its shape,
    # strides and ndim where the body names them; then the outputs.
    buffers = []
    for name, arr, (has_shape, has_strides, has_ndim) in zip(
        spec.input_names, inputs, signatures.shape_infos(spec)
    ):
        buf, strides = strided_buffer(name, arr)
        buffers.append(buf)
        if arr.ndim > 0:
            if has_shape:
                s = np.asarray(arr.shape, dtype=np.int32)
                buffers.append(Buffer(f"{name}_shape", s, s.nbytes))
            if has_strides:
                s = np.asarray(strides, dtype=np.int64)
                buffers.append(Buffer(f"{name}_strides", s, s.nbytes))
            if has_ndim:
                s = np.asarray(arr.ndim, dtype=np.int32)
                buffers.append(Buffer(f"{name}_ndim", s, s.nbytes))
    out_shape = p.kernel_out_shape(k_splits)
    for name in spec.output_names:
        buffers.append(Buffer(name, None, int(np.prod(out_shape)) * 4))
    (out,) = dispatch(
        prog,
        buffers,
        p.grid(spec.block_m, spec.block_n, spec.threadgroup, k_splits),
        spec.threadgroup,
        seed=seed,
        align_end=align_end,
        stats=stats,
    )
    out = np.frombuffer(out, dtype=np.float32).reshape(out_shape)
    if k_splits > 1:
        out = out.sum(axis=0, dtype=np.float32)
    return out.reshape(p.out_shape)
