"""Clang, and the runners it builds: the runtime once per process, each kernel
once per source (both cached by the hash of what goes into them).

The kernel's translation unit is compiled with the flags that make the checks
possible: every load and store calls the runtime first
(``-fsanitize-coverage=trace-loads,trace-stores``), and so does every edge
between basic blocks (``trace-pc-guard``: each lane's count of them says
which lanes store together, in the same step), vectorization off so that
no access is wider than the callbacks cover (16 bytes), no loop becomes a
memcpy call (``-fno-builtin``: its stores would go unseen), a fixed-size
array indexed out of bounds calls a handler that reports it and lets the run
go on (``-fsanitize=array-bounds``, recoverable: access_checks.cpp), and line
tables in DWARF 4 (``source_lines.py`` reads them).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
INCLUDE_DIR = HERE / "include"
# Everything compiled into a runner but the kernel: its object files are built
# from these once per process and shared by every runner.
RUNTIME_OBJECTS = ("job", "scheduler", "context", "memory", "access_checks", "findings", "async_copy")
HEADERS = ("runtime.h", "runtime_internal.h", "context.h", "metal_compat.h", "metal_simd.h", "metal_atomic.h",
           "mlx_utils.h")

CXXFLAGS = [
    "-x", "c++", "-std=c++23", "-O1", "-fno-strict-aliasing",
    "-Wall", "-Wno-unknown-attributes", "-Wno-unused-variable",
    "-Wno-unused-but-set-variable", "-Wno-gnu-anonymous-struct", "-Wno-nested-anon-types",
    "-fno-sanitize=all",
]
KERNEL_FLAGS = [
    "-fsanitize=array-bounds", "-fno-sanitize-trap=all", "-fsanitize-recover=array-bounds",
    "-fsanitize-coverage=edge,trace-pc-guard,trace-loads,trace-stores",
    "-fno-vectorize", "-fno-slp-vectorize",
    # No loop turned into a memcpy or memset call, which the instrumentation
    # would not see (a kernel's copy of its registers into an output would
    # be missed by memcheck and initcheck).
    "-fno-builtin",
    "-gline-tables-only", "-gdwarf-4",
]
INCLUDES = ["-I", str(HERE), "-I", str(INCLUDE_DIR)]


class HarnessError(Exception):
    """The checker could not build or run the kernel (not a verdict on it)."""


class CompilerFailed(Exception):
    """Clang rejected a source: its diagnostics."""

    def __init__(self, diagnostics: str):
        super().__init__(diagnostics)
        self.diagnostics = diagnostics


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
        "no clang found for the Metal checker: `pip install \"mlx-sgemm[check]\"` "
        "(or install clang, or set METAL_HARNESS_CXX)"
    )


_build_dir: Path | None = None


def build_dir() -> Path:
    """Where compiled runners are cached by source hash, for this process."""
    global _build_dir
    if _build_dir is None:
        _build_dir = Path(tempfile.mkdtemp(prefix="metal-check-"))
        atexit.register(shutil.rmtree, _build_dir, True)
    return _build_dir


def _run_compiler(args: list[str]) -> None:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
    except OSError as e:  # METAL_HARNESS_CXX names no program
        raise HarnessError(f"the Metal checker's compiler {args[0]!r} cannot run: {e}") from None
    if proc.returncode != 0:
        raise CompilerFailed(proc.stderr.strip() or proc.stdout.strip())


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:20]


def _headers_digest() -> str:
    return digest(*((HERE / h).read_bytes() for h in HEADERS))


def runtime_objects() -> list[Path]:
    """The runtime's object files, compiled once per process."""
    cc = compiler()
    key = digest(" ".join(cc), *CXXFLAGS, _headers_digest(),
                 *((HERE / f"{name}.cpp").read_bytes() for name in RUNTIME_OBJECTS))
    objects = []
    for name in RUNTIME_OBJECTS:
        obj = build_dir() / f"{name}-{key}.o"
        if not obj.exists():
            try:
                _run_compiler([*cc, *CXXFLAGS, *INCLUDES, "-c", str(HERE / f"{name}.cpp"),
                               "-o", str(obj)])
            except CompilerFailed as e:
                raise HarnessError(f"the checker's runtime does not compile:\n{e.diagnostics}") from None
        objects.append(obj)
    return objects


def build(name: str, unit: str) -> Path:
    """The runner for one translation unit, compiled and linked once per
    process. Raises CompilerFailed with clang's diagnostics."""
    cc = compiler()
    runtime = runtime_objects()
    key = digest(" ".join(cc), *CXXFLAGS, *KERNEL_FLAGS, unit, _headers_digest(),
                 *(obj.name for obj in runtime))
    stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:60]
    exe = build_dir() / f"{stem}-{key}"
    if exe.exists():
        return exe
    src = build_dir() / f"{stem}-{key}.cpp"
    src.write_text(unit)
    obj = src.with_suffix(".o")
    _run_compiler([*cc, *CXXFLAGS, *KERNEL_FLAGS, *INCLUDES, "-c", str(src), "-o", str(obj)])
    tmp = exe.with_suffix(".partial")
    _run_compiler([*cc, str(obj), *map(str, runtime), "-o", str(tmp)])
    tmp.replace(exe)
    return exe
