"""The Metal checker: any ``mx.fast.metal_kernel`` run on the CPU, with checks
like NVIDIA's compute-sanitizer's.

Use :func:`metal_kernel` as ``mx.fast.metal_kernel`` (same arguments, same
call), or the command line, ``mlx-sgemm check-kernel my_kernel.metal --grid
... --threadgroup ... --inputs x=x.npy --outputs out:64:float32``. The result
is the outputs and a :class:`Report` of findings. Or run a library's own
code with :func:`checked_metal_kernels`, inside which ``mx.fast.metal_kernel``
itself returns checked kernels (``mx.array`` in and out). The checks:

* **memcheck**: every read and write outside a buffer or a threadgroup
  variable (its exact size; which buffer, how far off, which thread, which
  source line), a fixed-size array indexed past its end (the array, the index,
  the line; the run goes on), and writes to inputs;
* **racecheck**: two threads of different simdgroups touching one byte of
  threadgroup memory between two barriers that order it, at least one writing,
  or two lanes of one simdgroup storing to it in the same step; two
  threadgroups writing one byte of an output without atomics: both threads
  and both lines;
* **synccheck**: a barrier not reached by every thread of the threadgroup
  (threads at different barriers, threads that returned before it), lanes at
  different simdgroup functions, a simdgroup function called while lanes are
  inactive (returned, or waiting at a barrier), a shuffle reading an inactive
  lane;
* **initcheck**: reads of threadgroup memory or of outputs never written
  (outputs are uninitialized in MLX unless ``init_value`` is given), and
  output elements no thread wrote.

How it works. The kernel's source is wrapped in exactly the signature MLX
would write (:mod:`mlx_sgemm.build.signatures`, a port of MLX's
``write_signature``), turned into C++ (:mod:`.translation`: threadgroup
variables become storage the runtime shares among a threadgroup's threads;
line numbers kept, and named after the user's files through ``#line``), and
compiled by clang against a Metal compatibility layer (``metal_compat.h``:
address spaces as clang address spaces, vectors, math, barriers, simdgroup
matrices and functions, atomics, MLX's indexing helpers). Threads are fibers
run by a seeded scheduler (``scheduler.cpp``), a threadgroup at a time.

The checks do not hope for a bad interleaving. clang instruments every load
and store of the kernel (``-fsanitize-coverage=trace-loads,trace-stores``:
a call with the address before each access, vectorization off so none is
wider than 16 bytes), and ``access_checks.cpp`` looks each one up among the
buffers and threadgroup variables, which sit in guarded memory
(``memory.cpp``): an access outside the data is reported before it happens,
and the run goes on. For threadgroup memory it keeps, per byte and per
interval between barriers, the last writer and the first readers of two
simdgroups: a conflict is found whatever order the threads ran in. Where an
access was comes from its return address, mapped to a line through the DWARF
line tables and inlining records clang writes (:mod:`.source_lines`, read with
pyelftools); accesses the compatibility layer makes for the kernel
(a simdgroup matrix load done by one lane for all, an atomic, an async copy)
are attributed to the kernel's call explicitly. This instruments the compiled
code rather than rewriting the source's accesses into accessor types: every
access is seen, however the kernel spells it (pointer arithmetic, helper
functions taking ``device T*``, casts to vector types), and the kernel's text
is compiled as it is.

What it proves and what it does not. It runs the kernel's logic on a CPU: the
results, the bounds, the barriers, the races between simdgroups. It does not
measure or model Apple GPU timing or occupancy, nor Apple's compiler itself
(its diagnostics, fast-math, register limits). Simdgroup-level behaviour is
emulated: 32-lane simdgroups whose collective operations (matrix
loads/multiplies, simd_sum, shuffles) meet in one place; lanes of one
simdgroup are taken to run in lockstep (as Apple GPUs run them), so racecheck
compares them only for stores to one address in the same step (each lane's
count of the code's edges taken); simdgroup functions called from diverging
branches are reported, and, where the other lanes returned or wait at a
barrier, performed for the active lanes as the hardware would. Memory
ordering is modelled only through barriers' ``mem_flags`` (a barrier without
``mem_threadgroup`` does not separate threadgroup accesses for racecheck);
atomics never race with each other; in device memory racecheck looks only at
outputs written by two threadgroups. Not modelled (they fail to compile, or
are refused): textures, function constants, simdgroup matrices other than
8x8 of float, half or bfloat, bfloat16 arrays (NumPy has no bfloat16;
``bfloat`` inside a kernel works). Linux on x86-64 (and aarch64, untested);
the compiler is clang from the ``ziglang`` package
(``pip install "mlx-sgemm[check]"``).
"""

from .command import add_parser as add_parser
from .command import run_command as run_command
from .compiler import HarnessError as HarnessError
from .findings import CHECKS as CHECKS
from .findings import CompileError as CompileError
from .findings import Finding as Finding
from .findings import KernelError as KernelError
from .findings import Location as Location
from .findings import Report as Report
from .kernel import CheckedKernel as CheckedKernel
from .kernel import CheckResult as CheckResult
from .kernel import metal_kernel as metal_kernel
from .patched_mlx import CheckLog as CheckLog
from .patched_mlx import FindingsError as FindingsError
from .patched_mlx import checked_metal_kernels as checked_metal_kernels

__all__ = [
    "CHECKS", "CheckLog", "CheckResult", "CheckedKernel", "CompileError", "Finding",
    "FindingsError", "HarnessError", "KernelError", "Location", "Report", "add_parser",
    "checked_metal_kernels", "metal_kernel", "run_command",
]
