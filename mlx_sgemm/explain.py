"""``mlx_sgemm.explain``: what ``matmul`` would run for a product, and why.

It plans and launches nothing, so it answers on any machine: on one without a
GPU, name the backend to plan for (``backend="cuda"``, ``"metal"``) and, for
CUDA, whether the GPU has warpgroup MMA (``wgmma``: Hopper, the default).

>>> import mlx_sgemm
>>> print(mlx_sgemm.explain((1, 4096), (4096, 4096), backend="cuda"))
"""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

import mlx.core as mx

from . import ops
from .bench import results
from .build import launcher, specs
from .dispatch import device, kernel_choice, tuning_cache
from .dispatch.problem import OPERAND_DTYPES, check_bool, check_operand, dtype_name, plan

# What each precision promises, by where the product runs.
_CONTRACTS = {
    ("float32", "tensor"): "float32-accurate: 3xTF32 on the tensor cores (each operand split into a "
                           "TF32 high and low part; error at or below cuBLAS SGEMM's)",
    ("float32", "fma"): "float32: FMAs in float32, error like any float32 summation order (~1e-7)",
    ("tf32", "tensor"): "TF32: one tensor-core pass on 10-bit mantissas, each operand rounded to nearest "
                        "TF32 as cuBLAS rounds it (~1e-4 relative error, like mx.matmul's CUDA default)",
    ("tf32", "fma"): "float32 (asked for TF32; this kernel computes in float32, more accurate than asked)",
    ("float32", "int8"): "float32-accurate: INT8 tensor-core products of residues (Ozaki scheme II), "
                         "as many moduli as the operands' rows and columns need for an error at or below "
                         "cuBLAS SGEMM's; lines no moduli count can carry go to float32 FMAs",
    ("float32", "float16"): "float32-accurate: each operand scaled per line and split into two float16 "
                            "parts, three float16 tensor-core products (error at or within 1.5x of cuBLAS "
                            "SGEMM's on zero-mean inputs from K = 32; about 3x it below that and on "
                            "all-positive inputs, as the 3xTF32 pipeline's there); lines too wide for "
                            "float16's range go to float32 FMAs",
    ("tf32", "float16"): "TF32: each operand scaled per line and rounded to float16 (11 significant bits, "
                         "TF32's), one float16 tensor-core product (error like mx.matmul's CUDA default); "
                         "lines too wide for float16's range go to float32 FMAs",
}


@dataclasses.dataclass(frozen=True)
class Explanation:
    """What ``matmul`` runs for one product, and why. ``str()`` prints it."""

    shape: str  # "M x N x K" with the batch, as planned
    backend: str
    device: str
    precision: str
    kernel: str  # the stage, or "mx.matmul"
    source: str  # the kernel file, or "" for mx.matmul
    parameters: dict  # block, threads, template constants, shared memory, grid
    k_splits: int
    padding: tuple[int, int]  # zero columns added to K and N first
    chosen_by: str  # "autotune cache (...)", "rule: ...", "deterministic mode", "CPU fallback"
    layouts: dict  # operand -> how the kernel reads it
    dtypes: dict  # operand -> its dtype name
    conversions: dict  # operand -> how it becomes float32 (kernel_choice.operand_conversions)
    contract: str
    recorded: dict | None  # the nearest recorded measurement of matmul's default mode (float32), if any

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.parameters.items())
        lines = [
            f"product      {self.shape}  ({self.precision})",
            f"backend      {self.backend} ({self.device})",
            f"kernel       {self.kernel}" + (f"  [{self.source}]" if self.source else ""),
        ]
        if params:
            lines.append(f"parameters   {params}")
        lines += [
            f"K split      {self.k_splits} way{'s' if self.k_splits != 1 else ''}",
            f"padding      K +{self.padding[0]}, N +{self.padding[1]}"
            + ("  (operands copied once with 16-byte aligned rows)" if any(self.padding) else ""),
            f"chosen by    {self.chosen_by}",
        ]
        lines += [f"operand {name}    {how}" for name, how in self.layouts.items()]
        lines += [f"dtype {name}      {self.dtypes[name]}: "
                  + (_HALF_TENSOR_CORE_WORDS.get(self.kernel, _CONVERSION_WORDS[how])
                     if how == kernel_choice.HALF_TENSOR_CORES else _CONVERSION_WORDS[how])
                  for name, how in self.conversions.items()]
        lines.append(f"contract     {self.contract}")
        if self.recorded:
            r = self.recorded
            lines.append(
                f"recorded     {r['shape']} on {r['device']}: {r['ratio']:.2f}x mx.matmul"
                + (f", {r['tflops']:.1f} TFLOP/s" if r.get("tflops") else "")
                + f"  ({r['file']}, calls: {r['calls']})")
        else:
            lines.append("recorded     no recorded measurement of matmul's default mode for this backend "
                         "and these dtypes")
        return "\n".join(lines)


# How an operand becomes float32, in words (kernel_choice.operand_conversions).
_CONVERSION_WORDS = {
    kernel_choice.AS_IS: "read as it is",
    kernel_choice.CONVERTED_ON_LOAD: "converted to float32 on load, inside the kernel (no copy)",
    kernel_choice.HALF_TILES: "read as it is into half tiles, inside the kernel (no copy, no cast): "
                              "multiplied on half simdgroup matrices into float32 accumulators",
    kernel_choice.HALF_TENSOR_CORES: "read as it is into shared memory by the TMA, inside the kernel (no copy, "
                                     "no cast): multiplied on the tensor cores (wgmma) into float32 accumulators",
    kernel_choice.CAST: "cast to float32 first (one astype of the whole operand, in MLX): "
                        "this kernel's copies move bytes into tiles the matrix units read as float32",
    "mx.matmul": "as MLX's matmul takes it",
}
# The other half tensor-core kernels' copies and products, where half_wgmma's
# are the TMA and wgmma.
_HALF_TENSOR_CORE_WORDS = {
    "half_mma": "read as it is into shared memory by cp.async, inside the kernel (no copy, no cast): "
                "multiplied on the tensor cores (mma.sync) into float32 accumulators",
    "half_gemv": "read as it is straight into the tensor cores' registers, inside the kernel (no copy, no cast, "
                 "no shared memory): multiplied on the tensor cores (mma.sync) into float32 accumulators",
}


def _parameter(name: str, value) -> tuple[str, object]:
    """A template constant as explain shows it. SPLIT (whether each operand is
    split into two TF32 parts) is shown as the passes it makes, so that it is
    not read as the K split shown beside it."""
    if name == "SPLIT":
        return "passes", "3xTF32" if value else "1xTF32"
    return name, int(value) if isinstance(value, bool) else value


def _dtypes_of(a, b, dtype) -> tuple[str, str]:
    """The operands' dtype names: an array's own, else ``dtype`` (one for both,
    or a pair; a name or an mx.Dtype)."""
    given = dtype if isinstance(dtype, (tuple, list)) else (dtype, dtype)
    if len(given) != 2:
        raise ValueError(f"dtype must be one dtype or a pair (a's, b's), got {dtype!r}")
    names = []
    for x, d in zip((a, b), given):
        d = x.dtype if isinstance(x, mx.array) else d
        d = dtype_name(d) if isinstance(d, mx.Dtype) else d
        if d not in specs.ELEMENT_TYPES:
            raise ValueError(f"dtype must be one of {specs.ELEMENT_TYPES}, got {d!r}")
        names.append(d)
    return names[0], names[1]


def _half_rows(p, block_m: int) -> str:
    """Why a half tensor-core kernel's blocks have ``block_m`` rows for ``p``
    (kernel_choice.half_block)."""
    if block_m == 128:
        return "128 rows"
    if p.M <= 64:
        return "C's rows fit in 64"
    return (f"64 rows (tiles of 128 rows, K split in stretches of at least {kernel_choice.HALF_MIN_SPLIT_K}, "
            "would leave SMs without a block)")


def _shape_of(x, name: str) -> tuple[int, ...]:
    if isinstance(x, mx.array):
        check_operand(x, name, OPERAND_DTYPES)
        return tuple(x.shape)
    try:
        if isinstance(x, str):
            raise TypeError
        shape = tuple(int(n) for n in x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an mlx.core.array or a shape (a tuple of ints), "
                        f"got {type(x).__name__}") from None
    if not shape or min(shape) < 0:
        raise ValueError(f"{name} must be a shape of at least one dimension, none negative, got {shape}")
    return shape


def _layouts(backend: str, spec, b_transposed: bool, one_row_fmas: bool = False) -> dict:
    if backend == device.CPU_FALLBACK:
        return {"a": "as MLX's CPU matmul reads it", "b": "as MLX's CPU matmul reads it"}
    if spec.ensure_row_contiguous:
        return {"a": "copied row-contiguous by MLX first", "b": "copied row-contiguous by MLX first"}
    b = ("a transposed view (x @ W.T): read in place, down its columns" if b_transposed
         else "row-major: read in place")
    if spec.source_file == "half_mma.cu":  # ldmatrix reads either layout, .trans the MN-major one
        return {
            "a": "read in place at its strides; by cp.async, row-major (K-major tiles) or a transposed view "
                 "(MN-major, read by ldmatrix.trans)",
            "b": b + "; by cp.async into " + ("K-major tiles (W's rows)" if b_transposed else "MN-major tiles")
                 + "; other strides are written into the tiles element by element",
        }
    if spec.source_file == "half_gemv.cu":  # runs of B as they lie, straight into mma's fragments
        one_row = (f" (one row: a warp {spec.block_n // (spec.threadgroup[0] // 32)} whole columns, "
                   "a load 512 bytes of one, FMAs)" if one_row_fmas else "")
        return {
            "a": "read in place at its strides; a row's runs of k through L1, shared by every warp",
            "b": b + (f" in 16-byte runs of k (W's rows){one_row}" if b_transposed else
                      " in runs of 4 columns, paired into k by byte permutes")
                 + "; other strides or alignments are read element by element",
        }
    if spec.source_file == "half_gemv_one_row.cu":  # made for W's rows; row-major B its fallback
        return {
            "a": "handed to the kernel as the layer holds it (no reshape before it), read in place at its "
                 "strides; the row's 16-byte runs of k through L1, shared by every warp",
            "b": "W handed to the kernel as the layer holds it (no transposed view before it: the product is "
                 "one node of MLX's graph); "
                 + b + (f" in 16-byte runs of k (W's rows), {dict(spec.template)['PARTS']} warps a row" if b_transposed
                      else f" in 64-byte runs of a row, by 1 in {32 // spec.block_n} of the blocks (slower: the "
                           "grid is made for W's rows)")
                 + "; other strides or alignments are read element by element",
        }
    if spec.source_file == "half_wgmma.cu":  # 16-bit wgmma reads either layout (chapter 8)
        return {
            "a": "read in place at its strides; by TMA, row-major (K-major tiles) or a transposed view (MN-major)",
            "b": b + "; by TMA into " + ("K-major tiles (W's rows)" if b_transposed else "MN-major tiles")
                 + "; other strides are written into the tiles element by element",
        }
    if spec.tensor_maps:
        b += "; by TMA" + (" (B^T's rows into a swizzled tile)" if b_transposed else " (swizzled panels)")
    in_place = "read in place at its strides (row-major, a transposed view or a slice: no copy)"
    # TF32 on wgmma: the tensor cores would truncate what they read, so each operand is rounded first.
    if spec.rounds_a_to_tf32:  # A copied by the TMA, as it lies
        a = ("rounded to nearest TF32 by a pass before the kernel (tf32_round.cu: one read and one write of A, "
             "row-contiguous), then read" + (" by TMA" if spec.tensor_maps else ""))
    elif spec.rounds_a_tiles_to_tf32:
        a = in_place + "; each k-tile rounded to nearest TF32 in shared memory by the producer"
    else:
        a = in_place + ("; by TMA when row-major" if spec.tensor_maps else "")
    if spec.tf32_wgmma:
        b += "; each element rounded to nearest TF32 in registers"
    return {"a": a, "b": b + "; other strides are read element by element"}


def _nearest_recorded(backend: str, precision: str, M: int, N: int, K: int, b_transposed: bool) -> dict | None:
    """matmul's recorded ratio to mx.matmul at the measured shape nearest to
    M x N x K (log distance), from the recorded shape suites and sweeps, of
    float32 operands; of runs equally near, the newest (by the date in its
    name): it measured the kernels as they are now; of those, the benchmark's
    sweep (bench-*.csv), the run the README's results and the no-GPU benchmark
    show; in a run timed both ways, its row timed one at a time, as those
    show it (bench.results.headline_calls)."""
    if backend != device.CUDA:
        return None  # every recorded run is on NVIDIA GPUs
    best, best_distance = None, math.inf
    for directory in results.recorded_directories():
        for path in sorted(Path(directory).glob("*.csv"),
                           key=lambda f: (results.run_date(f) or "", f.name.startswith("bench-"), f.stem)):
            with open(path, newline="") as f:
                # One at a time last: of equally near rows of a run, the later is kept.
                for row in sorted(csv.DictReader(f), key=lambda r: results.calls_of(r) == "one at a time"):
                    found = _recorded_row(row, precision, b_transposed)
                    if found is None:
                        continue
                    distance = sum(abs(math.log(x / y)) for x, y in zip(found["mnk"], (M, N, K)))
                    if distance <= best_distance:
                        best, best_distance = dict(found, file=path.name), distance
        if best:
            break
    return best


# A recorded row's ratio to mx.matmul at its precision: the sweep's column, the
# crossover benchmarks' (benchmarks/emulation_crossover.py) at float32 and TF32.
_RATIO_COLUMNS = ("x_matmul", "x_cublas_sgemm", "x_cublas_tf32")


def _recorded_row(row: dict, precision: str, b_transposed: bool) -> dict | None:
    if row.get("precision") != precision or results.dtype_of(row) != "float32":
        return None
    try:
        mnk = (int(row["M"]), int(row["N"]), int(row["K"]))
        if "ratio" in row:  # a shape-suite row: matmul against mx.matmul
            if (row.get("b_transposed_view") == "True") != b_transposed or row.get("batch"):
                return None
            return {"mnk": mnk, "shape": "x".join(map(str, mnk)), "device": row["device"],
                    "ratio": float(row["ratio"]), "tflops": None, "calls": results.calls_of(row)}
        if row.get("kernel") == "matmul" and not b_transposed:  # a sweep's or a crossover's row
            ratio = next(row[c] for c in _RATIO_COLUMNS if row.get(c))
            return {"mnk": mnk, "shape": "x".join(map(str, mnk)), "device": row["device"],
                    "ratio": float(ratio), "tflops": float(row["gflops"]) / 1e3, "calls": results.calls_of(row)}
    except (KeyError, ValueError, StopIteration):
        return None
    return None


def explain(
    a, b, *, precision: str = "float32", deterministic: bool = False, backend: str | None = None,
    wgmma: bool = True, b_transposed: bool = False, dtype="float32", layer: bool = False, stream=None,
) -> Explanation:
    """What ``mlx_sgemm.matmul(a, b, precision=..., deterministic=...)`` runs.

    ``a``, ``b``: arrays or their shapes. ``backend``: plan for "cuda" or
    "metal" whatever this machine has (default: the backend of ``stream``).
    ``wgmma``: on CUDA when no CUDA GPU is present, whether to plan for Hopper.
    ``b_transposed``: B is a transposed view (``x @ W.T``); arrays carry no
    strides MLX would show, so the layout is said, not read. ``dtype``: the
    dtype of operands given as shapes (one for both, or a pair; an array has
    its own): whether each is converted to float32 on load inside the kernel
    or cast first depends on the kernel (``dtypes`` and ``conversions``).
    ``layer``: the product of a model's layer (``mlx_sgemm.nn.Linear``,
    ``x @ W.T``, ``b`` being W.T), which runs other kernels than matmul's
    for a token's half products (a layer's products side by side, and a
    token alone read as MLX's GEMV reads W); implies ``b_transposed``.
    """
    kernel_choice.check_precision(precision)
    check_bool(deterministic, "deterministic")
    check_bool(wgmma, "wgmma")
    check_bool(b_transposed, "b_transposed")
    check_bool(layer, "layer")
    b_transposed = b_transposed or layer
    a_shape, b_shape = _shape_of(a, "a"), _shape_of(b, "b")
    given = plan(a_shape, b_shape)  # shape errors name the shapes as given
    rows = ops.folded_rows(a_shape, b_shape)  # a batch of rows against one b is one matrix, as the ops run it
    types = _dtypes_of(a, b, dtype)
    dtypes = dict(zip("ab", types))
    p = plan(rows, b_shape)
    here = device.backend(stream)
    backend = backend or here
    if backend not in (device.CUDA, device.METAL, device.CPU_FALLBACK):
        raise ValueError(f"backend must be 'cuda', 'metal' or None, got {backend!r}")
    has_wgmma = device.has_wgmma() if here == device.CUDA else wgmma
    batch = f", batch {p.batch}" if p.batch_shape else ""
    if rows != a_shape:
        batch = f", a's batch of {given.batch} folded into its rows (one product, b read once)"
    shape = f"{a_shape} @ {b_shape}: M {p.M}, N {p.N}, K {p.K}{batch}"
    a_shape = rows
    if here == backend:
        name = "MLX on the CPU" if backend == device.CPU_FALLBACK else device.name()
    elif backend == device.CUDA:
        name = f"planned for {'a Hopper GPU (wgmma)' if has_wgmma else 'a CUDA GPU without wgmma'}, none here"
    else:
        name = "planned for an Apple GPU, none here"
    if backend == device.CPU_FALLBACK:
        return Explanation(
            shape, backend, name, precision, "mx.matmul", "", {}, 1, (0, 0),
            "CPU fallback: MLX's CPU backend runs no custom kernels, so every op computes with "
            "mx.matmul (name the backend cuda or metal to plan for a GPU)",
            _layouts(backend, None, b_transposed), dtypes, dict.fromkeys("ab", "mx.matmul"),
            "float32 (MLX's CPU matmul)", None)

    if p.empty:
        return Explanation(
            shape, backend, name, precision, "none", "", {}, 1, (0, 0),
            "an empty product: the result is zeros, no kernel runs", {}, dtypes, {}, "exact", None)
    tuned = None
    if deterministic:
        how = kernel_choice.for_operands(kernel_choice.deterministic(backend, precision, has_wgmma), backend, p,
                                         types, deterministic=True, matmul=True, wgmma=has_wgmma)
        pad_k = pad_n = 0
        chosen_by = "deterministic mode: one kernel for every shape, K never split, no autotune lookup"
    else:
        if here == backend:
            tuned = kernel_choice.tuned(backend, precision, p)

        def choose(backend_, p_):
            return tuned or kernel_choice.heuristic(backend_, precision, p_, has_wgmma)

        choose.matmul = True  # matmul's choice, as kernel_choice.chooser's
        choose.layer = layer
        pad_k, pad_n, _, _, how = ops.route_plan(choose, backend, a_shape, b_shape, True, types, wgmma=has_wgmma)
        if tuned is not None:
            chosen_by = f"autotune cache ({tuning_cache.cache_path()}), entry {how.key}"
        else:
            padded = plan(
                (*a_shape[:-1], a_shape[-1] + pad_k), (*b_shape[:-2], b_shape[-2] + pad_k, b_shape[-1] + pad_n))
            chosen_by = "rule: " + kernel_choice.choose_with_rule(backend, precision, padded, has_wgmma)[1]
            if how.spec.stage == "half_wgmma":
                rounds = kernel_choice.half_wgmma_rounds(padded, how.spec.block_m)
                chosen_by = (f"rule: both operands {types[0]} on Hopper: multiplied as they are on the tensor "
                             f"cores (chapter 8), a {how.spec.block_m}x{how.spec.block_n} block: "
                             + _half_rows(padded, how.spec.block_m)
                             + f", {how.spec.block_n} columns: their rounds of tiles over the SMs take the least "
                             "time (rounds x a round's cost: "
                             + ", ".join(f"{bn} columns {r} x {kernel_choice.TILE_COSTS[bn]:g}"
                                         for bn, r in rounds.items()) + ")")
            elif how.spec.stage == "half_mma":
                chosen_by = (f"rule: both operands {types[0]} on a CUDA GPU without wgmma: multiplied as they are "
                             f"on the tensor cores by mma.sync (chapter 8), a {how.spec.block_m}x"
                             f"{how.spec.block_n} block: "
                             + _half_rows(padded, how.spec.block_m)
                             + ", 128 columns: three stages fit every such GPU's shared memory")
            elif how.spec.stage == "half_gemv_one_row":
                chosen_by = (f"rule: both operands {types[0]}, one row, a model layer's x @ W.T: bound by "
                             "reading W, read as MLX's GEMV reads it, a row of W a column of C "
                             f"({dict(how.spec.template)['PARTS']} warps each, {how.spec.min_blocks} blocks "
                             "of 8 warps an SM)")
            elif how.spec.stage == "half_gemv":
                chosen_by = (f"rule: both operands {types[0]}, M <= {kernel_choice.SMALL_M} rows: bound by reading "
                             "B, which goes straight from memory into mma.sync's registers (chapter 8), "
                             f"blocks of {how.spec.block_n} columns"
                             + (" (blocks of 32 would number fewer than two an SM)" if how.spec.block_n < 32 else "")
                             + f", their {how.spec.threadgroup[0] // 32} warps taking turns down K"
                             + (f", {how.spec.min_blocks} blocks an SM: blocks enough to overlap their ends"
                                if how.spec.min_blocks > 1 else ", a block an SM"))
            if how.k_splits > 1:
                tiles = padded.tile_count(how.spec.block_m, how.spec.block_n)
                chosen_by += (f"; K split {how.k_splits} ways: {tiles} output tiles alone would leave "
                              f"most of the GPU's SMs idle")
    spec = how.spec
    threads = spec.threadgroup[0] * spec.threadgroup[1] * spec.threadgroup[2]
    parameters = {
        "block": f"{spec.block_m}x{spec.block_n}", "threads": threads,
        **dict(_parameter(k, v) for k, v in spec.template),
        "blocks": p.tile_count(spec.block_m, spec.block_n) * how.k_splits,
    }
    if spec.persistent:  # a block an SM or so, each walking its matrix's tiles
        parameters["tiles"] = parameters["blocks"]
        parameters["blocks"] = launcher.blocks_per_matrix(spec, p, how.k_splits) * p.batch * how.k_splits
    if spec.shared_memory:
        parameters["shared_memory"] = f"{spec.shared_memory // 1024} KB"
    unit = "fma" if kernel_choice.runs_on_fma(spec) else "tensor"
    # half_gemv's one row against W's rows: FMAs, not its tensor-core fragments, where its
    # blocks' columns split into whole columns a warp (kernels/cuda/half_gemv.cu, one_row).
    one_row_fmas = (spec.source_file == "half_gemv.cu" and p.M == 1 and b_transposed
                    and dict(spec.template).get("ONE_ROW", 0) > 0
                    and spec.block_n % (spec.threadgroup[0] // 32) == 0)
    if how.spec.stage == kernel_choice.EMULATED.stage:
        from .emulation import gpu

        unit = "int8"
        parameters["moduli"] = (f"{gpu.least_moduli(p.K)}-{gpu.MAX_MODULI}, chosen on the GPU from the "
                                "operands (mlx_sgemm.emulation.op.assess reads the choice)")
    elif how.spec.stage in (kernel_choice.HALF_SPLIT.stage, kernel_choice.HALF_SPLIT_TF32.stage):
        unit = "float16"
    if backend == device.METAL:
        contract = "float32 (Apple GPUs have no TF32 mode)" if precision == "tf32" else "float32: simdgroup matrices in float32"
        if spec.reads_half_tiles(*spec.operand_types):
            contract = ("float32 accumulation: half simdgroup matrices (their products exact in float32) "
                        "into float32 accumulators, rounded once to the result dtype")
    elif one_row_fmas:
        contract = _CONTRACTS[("float32", "fma")] + f", rounded once to {spec.output_type} in the kernel"
    elif spec.source_file in specs.HALF_TENSOR_CORE_SOURCES:
        contract = (f"float32 accumulation: {types[0]} products on the tensor cores (exact in float32), summed "
                    f"in float32, rounded once to {types[0]} (precision= concerns float32 operands alone)")
    else:
        contract = _CONTRACTS[(precision, unit)]
        if spec.output_type != "float32":  # a small-M kernel's rounding instance
            contract += f", rounded once to {spec.output_type} in the kernel"
    return Explanation(
        shape, backend, name, precision, spec.stage, f"kernels/{backend}/{spec.source_file}", parameters,
        how.k_splits, (pad_k, pad_n), chosen_by, _layouts(backend, spec, b_transposed, one_row_fmas), dtypes,
        dict.fromkeys("ab", kernel_choice.CONVERTED_ON_LOAD) if one_row_fmas
        else kernel_choice.operand_conversions(spec, *types), contract,
        None if deterministic or types != specs.FLOAT32_OPERANDS  # the recorded runs are float32's
        else _nearest_recorded(backend, precision, p.M, p.N, p.K, b_transposed))
