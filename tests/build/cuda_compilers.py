"""Compile CUDA kernel sources the two ways we can without a GPU.

* ``nvrtc``: NVIDIA's runtime compiler, which is what MLX's CUDA backend uses
  (mlx/backend/cuda/jit_module.cpp), with MLX's options: no C++ standard library,
  ``--device-as-default-execution-space``, ``--gpu-architecture=sm_90a``, and
  MLX's device header given in memory under the name MLX includes it by.
* ``nvcc``: the offline compiler, for ptxas's resource report (registers,
  shared memory, spills).
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

STUB_DIR = Path(__file__).parent / "cuda_stub"
MLX_UTILS = "mlx/backend/cuda/device/utils.cuh"
CUDA_INCLUDE_DIRS = [
    d for d in ("/usr/local/cuda/include", "/usr/local/cuda/include/cccl") if os.path.isdir(d)
]
ARCH = "sm_90a"


class CompileError(AssertionError):
    pass


def find_libnvrtc() -> str | None:
    """libnvrtc from the nvidia-cuda-nvrtc wheel, else the CUDA toolkit."""
    patterns = [
        os.path.join(p, "nvidia", "cu13", "lib", "libnvrtc.so.13") for p in sys.path
    ] + ["/usr/local/cuda/lib64/libnvrtc.so*"]
    for pattern in patterns:
        for path in glob.glob(pattern):
            return path
    return None


def nvrtc_compile(source: str, name: str = "kernel.cu") -> str:
    """Compile with NVRTC as MLX does; return the log (ptxas report included)."""
    return nvrtc_compile_ptx(source, name)[0]


def nvrtc_compile_ptx(source: str, name: str = "kernel.cu") -> tuple[str, str]:
    """Compile with NVRTC as MLX does; return the log and the PTX."""
    path = find_libnvrtc()
    if path is None:
        raise FileNotFoundError("libnvrtc not found (pip install nvidia-cuda-nvrtc)")
    # libnvrtc dlopens its builtins by soname; load them first from the same folder.
    for builtins in glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so*")):
        ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(path)
    prog = ctypes.c_void_p()
    header = (STUB_DIR / MLX_UTILS).read_text().encode()
    headers = (ctypes.c_char_p * 1)(header)
    names = (ctypes.c_char_p * 1)(MLX_UTILS.encode())
    status = lib.nvrtcCreateProgram(
        ctypes.byref(prog), source.encode(), name.encode(), 1, headers, names
    )
    if status:
        raise CompileError(f"nvrtcCreateProgram failed ({status})")
    options = [
        "--device-as-default-execution-space",
        f"--gpu-architecture={ARCH}",
        "--ptxas-options=-v",
        *[f"--include-path={d}" for d in CUDA_INCLUDE_DIRS],
    ]
    opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    try:
        status = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value + 1)
        lib.nvrtcGetProgramLog(prog, log)
        text = log.value.decode(errors="replace")
        ptx = ""
        if not status:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buffer = ctypes.create_string_buffer(size.value + 1)
            lib.nvrtcGetPTX(prog, buffer)
            ptx = buffer.value.decode(errors="replace")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if status:
        raise CompileError(f"NVRTC failed to compile {name}:\n{text}")
    return text, ptx


def nvcc_compile(source: str, workdir: Path, arch: str = "90a") -> str:
    """Compile with nvcc for sm_<arch> (sm_90a unless told); return ptxas's report."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found")
    src = workdir / "kernel.cu"
    src.write_text(source)
    result = subprocess.run(
        [nvcc, "-std=c++17", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xptxas", "-v",
         "-I", str(STUB_DIR), "-c", str(src), "-o", str(workdir / "kernel.o")],
        capture_output=True, text=True,
    )
    if result.returncode:
        raise CompileError(result.stderr)
    return result.stderr
