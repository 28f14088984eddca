"""Which kernel ``mlx_sgemm.matmul`` runs for a shape, backend and precision.

The choice follows measurements on an H200 (docs/performance-log.md). On CUDA a
product of at most 8 rows (a token's activations against a weight) is bound by
reading B and runs small_m, float32 FMAs at memory speed, in either precision
(small_m_wide for up to 4 rows against 12288 columns and more).
On Hopper GPUs, float32 products with every side at least 2048 run the
float16 split (``fp16_emulated``, chapter 7), and large TF32 ones (M and N
with a harmonic mean of at least 3072, M N K at least 4096 x 4096 x 2048) its
one-part form; everything else runs the wgmma pipeline (tile_wgmma: 3xTF32
for float32 accuracy, one pass for TF32) in blocks as tall as C needs (32, 64
or 128 rows; 256 for TF32), with K split across threadgroups when the output
has fewer tiles than the GPU has SMs, and big operands whose rows are not 16-byte
aligned copied to padded ones first (``padding``). Other CUDA GPUs
get the fastest mma.sync / FMA kernels: tile_threads for float32 (~41 TFLOP/s
at 8192^3 on an H200, ahead of the 3xTF32 mma.sync pipeline's ~19) and
tile_async's single TF32 pass. On Metal the pipelined simdgroup-matrix kernel
(tile_async) is the choice, and for M <= 8 the 8-row variant of
tile_simdgroup (small_m, after Akunu's GEMM chapter's small GEMM). Neither Metal choice is measured here (no Apple GPU).

The choice is by shape and precision; the operands' dtypes then decide its
instance (``for_operands``). On Hopper a pair of one half type goes from the
tensor-core kernels to half_wgmma (chapter 8: the halves multiplied as they
are, C rounded once), whatever the precision, on other CUDA GPUs from the
large-product kernels (tile_threads, the TF32 pipeline) to half_mma, its
mma.sync form, and from the small-M kernels (up to 8 rows) to half_gemv on any
GPU with mma.sync. Otherwise the chosen kernel runs as its instance for their
element types where it converts on load (``Launch.reading``: the small-M
kernels for a mixed pair, which round C to a half type themselves, among
others), and the others get their half operands cast to float32 first;
``operand_conversions`` says which, per operand (``mlx_sgemm.explain`` shows it).

That is the heuristic. ``mlx_sgemm.autotune`` times the candidates for a shape
instead, once per (device, precision, shape class), and what it found (kept in
mlx_sgemm.dispatch.tuning_cache's cache) takes precedence.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from ..build import specs
from ..emulation.moduli import INT32_EXACT_K
from . import device, tuning_cache
from .problem import Plan

PRECISIONS = ("float32", "tf32")

# CUDA TF32 without wgmma: BK 32, 3 stages: 54.5 TFLOP/s at 8192^3 on an H200.
_CUDA_TF32 = specs.cuda_pipelined("matmul_tf32", SPLIT=False, BK=32, STAGES=3, LOADERS=0)
_HOPPER_FLOAT32 = specs.spec("tile_wgmma", "cuda")
# The matrix-unit stages' loading warpgroup (sgemm::SplitRing) takes its
# registers from the multiplying warps by setmaxnreg, which only Hopper
# (sm_90a) has; elsewhere the 8 warps load too. tile_async's rings (208 KB)
# also need a Hopper block's 227 KB of shared memory: without loaders, BK 16
# with four stages (138 KB) fits an A100's 163 KB; tile_simdgroup two buffers.
_TILE_ASYNC_WITHOUT_SETMAXNREG = specs.cuda_pipelined(BK=16, STAGES=4, LOADERS=0)
_TILE_SIMDGROUP_WITHOUT_SETMAXNREG = specs.cuda_warp_tiled(LOADERS=0, STAGES=2)
_HOPPER_TF32 = specs.cuda_wgmma("matmul_tf32_wgmma", SPLIT=False)
# TF32's 256-row blocks (every product of more than 128 rows): one k-tile's
# products in flight across the next one's barrier, one k-tile of copies
# ahead (with 2 the ring had a stage too few). H200, same process, two runs:
# 287 / 301 -> 302 / 318 TFLOP/s at 4096^3, 299 / 288 -> 313 / 305 at 8192^3.
# Copies by TMA: run for seconds at the power limit, 277 -> 286 TFLOP/s at
# 4096^3, 308 -> 318 at 8192^3 (docs/performance-log.md, "tile_wgmma: A and B by TMA").
_HOPPER_TF32_TALL = specs.cuda_wgmma(
    "matmul_tf32_wgmma", SPLIT=False, BM=256, IN_FLIGHT=True, LOOKAHEAD=1, TMA=1)
# tile_wgmma's block heights: C's rows up to 32 or 64 take a narrower block,
# whose products are only that wide (no tensor work on rows C does not have).
# TF32 goes up to 256 (one accumulator leaves room for it; half the L2 reads
# of B per row of C).
_WGMMA_ROWS = {"float32": (32, 64, 128), "tf32": (32, 64, 128, 256)}


# The emulations (mlx_sgemm.emulation, chapter 7) stand in matmul's choices as
# a spec each (their products' kernel, for the name and the tile): ops and the
# autotuner run the op of that name for it (EMULATION_OPS). On Hopper at
# float32 the float16 split (fp16_emulated) is the choice for one product (no
# batch) with every side at least HALF_SPLIT_MIN_SIDE. H200, the split
# compiled as matmul runs it against the 3xTF32 wgmma pipeline in one process
# (docs/performance-log.md, "The products' epilogues: shifts read once,
# stores without checks"): 1.26x the pipeline at 2048^3, 1.85x at 3072^3,
# 1.82x at 2048x4096x4096, 1.84-2.26x on the LLM shapes and 1.99x at 4096^3.
# Below a side of 2048 it is untimed. The INT8 emulation was slower than the
# split on every shape timed (H100, results/emulation-crossover-2026-11-27-h100.csv:
# the split 1.24-2.05x faster), so no rule picks it; the autotuner still
# tries both.
EMULATED = dataclasses.replace(specs.cuda_int8_products(), stage="int8_emulated")
HALF_SPLIT = dataclasses.replace(specs.cuda_half_products_for("float32"), stage="fp16_emulated")
HALF_SPLIT_NARROW = dataclasses.replace(specs.cuda_half_products_for("float32", narrow=True), stage="fp16_emulated")
# What a 128 x 128 tile of the split's float32 products costs against one of
# 128 x 192, each SM taking a tile at a time: 0.66-0.71 on an H200, products
# kernel alone, from 2048^3 to 8192^3 (docs/performance-log.md, "The float16
# split's products in blocks of 128 x 128 where they fill the rounds"), about
# the 2/3 of their outputs. A middle value.
NARROW_PRODUCTS_TILE_COST = 0.69
# At TF32 the split keeps one float16 part (one product, at float16's rate,
# twice TF32's): it takes products whose M and N have a harmonic mean
# 2 M N / (M + N) of at least HALF_TF32_MIN_HARMONIC, K at least
# HALF_TF32_MIN_K, M N K at least HALF_TF32_MIN_VOLUME and every side at least
# HALF_SPLIT_MIN_SIDE. Its statistics and splits cost ~(M + N) K, the
# products M N K, so the harmonic mean of M and N says which weighs more.
# H200, against the one-pass wgmma pipeline in one process (the same entry):
# 1.24x the pipeline at 4096^3, 1.35x at 8192x8192x2048, 1.04x at
# 4096x4096x2048, 1.10x at 2048x14336x4096 (harmonic mean 3584), 1.15x at
# 3072x3072x8192; level at 3072^3 (0.98x) and 2048x4096x14336 (1.00x, harmonic
# mean 2731); 0.97x at 2048x4096x4096 and 0.78x at 2048^3, where the
# pipeline stays.
HALF_SPLIT_TF32 = dataclasses.replace(specs.cuda_half_products_for("tf32"), stage="fp16_emulated_tf32")
EMULATION_OPS = {EMULATED.stage: "int8_emulated", HALF_SPLIT.stage: "fp16_emulated",
                 HALF_SPLIT_TF32.stage: "fp16_emulated"}
_EMULATION_PRECISIONS = {HALF_SPLIT_TF32.stage: "tf32"}  # the ops' precision= where not float32
HALF_SPLIT_MIN_SIDE = 2048
HALF_TF32_MIN_HARMONIC, HALF_TF32_MIN_K = 3072, 2048
HALF_TF32_MIN_SHAPE = (4096, 4096, 2048)  # M N K at least this product's
HALF_TF32_MIN_VOLUME = math.prod(HALF_TF32_MIN_SHAPE)


# The kernels that multiply with FP32 FMAs (by source file), the rest with tensor cores.
FMA_SOURCES = ("naive", "tile", "tile_threads", "small_m", "small_m_wide", "half_gemv_one_row")


def runs_on_fma(spec: specs.KernelSpec) -> bool:
    """Whether ``spec``'s kernel multiplies with FP32 FMAs rather than tensor cores."""
    return spec.source_file.split(".")[0] in FMA_SOURCES


def is_emulated(launch: Launch) -> bool:
    """Whether ``launch`` is an emulation (several kernels) rather than one kernel."""
    return launch.spec.stage in EMULATION_OPS


def emulation_op(launch: Launch):
    """The op (``mlx_sgemm.int8_emulated`` or ``fp16_emulated``, with its
    precision) that an emulation's launch stands for."""
    import mlx_sgemm

    op = getattr(mlx_sgemm, EMULATION_OPS[launch.spec.stage])
    precision = _EMULATION_PRECISIONS.get(launch.spec.stage)
    return op if precision is None else functools.partial(op, precision=precision)


def _emulation_runs(p: Plan) -> bool:
    """Whether the INT8 emulation takes ``p`` at all: one product, K within its bound."""
    return p.batch == 1 and p.K <= INT32_EXACT_K


def half_split_spec(precision: str, m: int, n: int, sms: int | None = None) -> specs.KernelSpec:
    """The float16 split's products kernel for an M x N product: at TF32
    HALF_SPLIT_TF32; at float32 128 x 128 blocks where their rounds of tiles
    (one a Hopper SM at a time, on ``sms`` SMs) take less time than 128 x
    192's, a narrow round costing NARROW_PRODUCTS_TILE_COST of a wide one,
    else 128 x 192: narrow at 2048^3 (two rounds of 256 tiles against two of
    176, a third wider) and 4096^3 (8 rounds against 6), wide at 8192^3 (32
    rounds against 21) and 3072^3 (5 against 3)."""
    if precision == "tf32":
        return HALF_SPLIT_TF32
    sms = sms or _multiprocessors()

    def rounds(bn: int) -> int:
        return math.ceil(math.ceil(m / 128) * math.ceil(n / bn) / sms)

    return HALF_SPLIT_NARROW if rounds(128) * NARROW_PRODUCTS_TILE_COST < rounds(192) else HALF_SPLIT


def half_split_serves(precision: str, p: Plan) -> bool:
    """Whether the rule picks the float16 split for ``p`` at ``precision``
    (where it was measured faster)."""
    if p.batch != 1 or min(p.M, p.N, p.K) < HALF_SPLIT_MIN_SIDE:
        return False
    if precision == "tf32":
        return (2 * p.M * p.N >= HALF_TF32_MIN_HARMONIC * (p.M + p.N) and p.K >= HALF_TF32_MIN_K
                and p.M * p.N * p.K >= HALF_TF32_MIN_VOLUME)
    return True


SMALL_M = 8  # rows of C up to which the product is memory-bound (small_m)
# Up to WIDE_M rows against at least WIDE_N columns, small_m_wide: its blocks
# of 128 columns then number 96 and more, enough to fill the GPU with one
# product. With fewer (32 at N = 4096), one product at a time was slow: H200,
# float32, shape_suite.py --one-at-a-time (docs/performance-log.md, "One
# product at a time: what the suite's loop had hidden"),
# 1x4096x4096 W.T 64 -> 47 us and 1x4096x14336 134 -> 95 with small_m there
# (MLX: 45, 92). (Timing many independent calls at once, which the GPU runs
# side by side, had made 4096 look right.)
WIDE_M, WIDE_N = 4, 12288
# Threadgroups that fill an H100/H200 (132 SMs, one tile_wgmma block each).
HOPPER_SMS = 132
# The shortest stretch of K worth a split: 32 k-tiles of the pipeline.
MIN_SPLIT_K = 1024
# Split-K pays wherever the output's tiles leave SMs idle: a product's time
# is then its one wave of too few blocks. H200, float32, each call waiting for
# the previous one (shape_suite.py --one-at-a-time), 32 tiles: 32x4096x14336
# 354 -> 130 us (4 splits), 128x4096x4096 215 -> 106. Timing many independent
# calls at once instead, their blocks fill each other's idle SMs and splits at
# 32 and 64 tiles look slower (TF32 512x4096x4096, 64 tiles split 2 ways:
# 0.79x); a product on its own is what the rule serves (docs/performance-log.md,
# "One product at a time: what the suite's loop had hidden").


def k_splits(backend: str, spec: specs.KernelSpec, p: Plan) -> int:
    """How many ways to split K for ``spec`` on problem ``p`` (1: not at all).

    Split-K pays when the output has fewer tiles than the GPU has SMs while K
    is long: each split's threadgroups then take a stretch of K, and the partial
    products are summed afterwards (launcher.launch). Every kernel can split, but the
    heuristic splits only the Hopper pipeline, the one measured (the autotuner
    tries splits everywhere). The splits stay within one wave of threadgroups:
    a partly filled second wave takes as long as a full one (64 tiles split 3
    ways, 192 blocks on 132 SMs, ran TF32 512x4096x4096 at 0.63x mx.matmul).
    """
    if backend != device.CUDA or spec.source_file != "tile_wgmma.cu":
        return 1
    return _splits_filling(p, p.tile_count(spec.block_m, spec.block_n))


def _splits_filling(p: Plan, tiles: int, k_tile: int = 32, sms: int = HOPPER_SMS,
                    min_split: int = MIN_SPLIT_K) -> int:
    """How many ways to split K so that ``tiles`` output tiles fill ``sms`` SMs
    in one wave, each split at least ``min_split`` long and a whole number of
    ``k_tile``s (1: not at all)."""
    wanted = min(sms // tiles, p.K // min_split)
    if wanted <= 1:
        return 1
    return -(-p.K // p.k_split_length(wanted, k_tile))  # splits of that length cover K


# Padding K and N to multiples of 4 costs a copy of both operands; below this
# many rows and columns of C that copy would cost more than it saves.
MIN_PADDED = 512


def padding(backend: str, p: Plan, element_bytes: int = 4) -> tuple[int, int]:
    """How many zero columns of A / rows of B (K) and columns of B (N) to add so
    that every row of the operands starts 16 bytes aligned, or (0, 0)
    (``element_bytes``: 4 for float32 operands, 2 for halves as half_wgmma reads them).

    The CUDA kernels copy operands with 16-byte cp.async where rows are 16-byte
    aligned, and 4 bytes at a time otherwise: 4095x4097x4093 ran at 0.43x
    mx.matmul (docs/performance-log.md, "Short C and unaligned operands"). Zeros add nothing to the dot products, and
    the extra columns of C are sliced off.
    """
    if backend != device.CUDA or min(p.M, p.N) < MIN_PADDED:
        return 0, 0
    per_row = 16 // element_bytes
    return -p.K % per_row, -p.N % per_row


def check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")


def choose(backend: str, precision: str, p: Plan, wgmma: bool | None = None) -> specs.KernelSpec:
    """The kernel for one product. ``precision`` "tf32" is honoured on CUDA only;
    Metal has no TF32 mode, so there (and on the CPU) the product is float32,
    more accurate than asked, never less. ``wgmma``: whether the GPU has
    warpgroup MMA (Hopper); None asks the device."""
    return choose_with_rule(backend, precision, p, wgmma)[0]


def choose_with_rule(
    backend: str, precision: str, p: Plan | None, wgmma: bool | None = None,
) -> tuple[specs.KernelSpec, str]:
    """:func:`choose`'s kernel and the rule that picked it, in words (what
    :func:`mlx_sgemm.explain` shows). ``p`` None: a product of many rows."""
    if backend == device.CUDA:
        if p is not None and p.M <= WIDE_M and p.N >= WIDE_N:
            return specs.spec("small_m_wide", backend), (
                f"M <= {WIDE_M} rows against N >= {WIDE_N} columns: memory-bound; "
                "128-column blocks read B straight into registers, enough blocks to fill the GPU")
        if p is not None and p.M <= SMALL_M:
            return specs.spec("small_m", backend), (
                f"M <= {SMALL_M} rows: bound by reading B; float32 FMAs at memory speed, in either precision")
        if device.has_wgmma() if wgmma is None else wgmma:
            if precision == "float32" and p is not None and half_split_serves(precision, p):
                return half_split_spec(precision, p.M, p.N), (
                    f"Hopper, float32, one product with M, N and K >= {HALF_SPLIT_MIN_SIDE}: the float16 split "
                    "(chapter 7), faster there than the 3xTF32 wgmma pipeline and the INT8 emulation")
            if precision == "tf32" and p is not None and half_split_serves(precision, p):
                return HALF_SPLIT_TF32, (
                    f"Hopper, TF32, one product with K >= {HALF_TF32_MIN_K}, 2MN / (M + N) >= "
                    f"{HALF_TF32_MIN_HARMONIC} and M N K >= {'x'.join(map(str, HALF_TF32_MIN_SHAPE))}: the float16 split "
                    "with one part "
                    "(chapter 7), faster there than the one-pass wgmma pipeline")
            spec = _hopper(precision, 128 if p is None else p.M)
            return spec, (
                f"Hopper: the wgmma pipeline ({'one TF32 pass' if precision == 'tf32' else '3xTF32'}), "
                f"the lowest block of {_WGMMA_ROWS[precision]} rows that holds C's rows: {spec.block_m}")
        return _without_wgmma(precision), (
            "a CUDA GPU without wgmma: "
            + ("the cp.async TF32 pipeline" if precision == "tf32" else "FMA register tiles, ahead of 3xTF32 mma.sync"))
    if p is not None and p.M <= SMALL_M:
        return specs.spec("small_m", backend), (
            f"M <= {SMALL_M} rows: tile_simdgroup with an 8x128 block (Akunu's small GEMM)")
    return specs.spec("tile_async", backend), "the pipelined simdgroup-matrix kernel (unmeasured on Apple GPUs here)"


@functools.cache
def _hopper(precision: str, rows: int) -> specs.KernelSpec:
    """tile_wgmma for ``precision`` with the lowest block that holds ``rows`` rows of C."""
    base = _HOPPER_TF32 if precision == "tf32" else _HOPPER_FLOAT32
    heights = _WGMMA_ROWS[precision]
    bm = next((bm for bm in heights if rows <= bm), heights[-1])
    if precision == "tf32" and bm == _HOPPER_TF32_TALL.block_m:
        return _HOPPER_TF32_TALL
    return base if bm == base.block_m else specs.cuda_wgmma(base.stage, SPLIT=precision != "tf32", BM=bm)


def wgmma_launch(precision: str, p: Plan) -> Launch:
    """The wgmma pipeline's launch for ``p`` at ``precision``, whatever the rule
    picks (benchmarks/emulation_crossover.py times it against the emulation)."""
    spec = _hopper(precision, p.M)
    return Launch(spec, k_splits(device.CUDA, spec, p))


def wgmma_variants(precision: str) -> list[specs.KernelSpec]:
    """The tile_wgmma specs matmul may run at ``precision`` on Hopper."""
    return [_hopper(precision, rows) for rows in _WGMMA_ROWS[precision]]


def stage_spec(stage: str, backend: str, wgmma: bool | None = None) -> specs.KernelSpec:
    """The kernel of the journey's stage ``stage`` on this device (on a CUDA
    GPU with or without Hopper's wgmma, setmaxnreg and shared memory, where
    ``wgmma`` says)."""
    hopper = device.has_wgmma() if wgmma is None else wgmma
    if backend == device.CUDA and not hopper:
        if stage == "tile_async":
            return _TILE_ASYNC_WITHOUT_SETMAXNREG
        if stage == "tile_simdgroup":
            return _TILE_SIMDGROUP_WITHOUT_SETMAXNREG
    return specs.spec(stage, backend)


def _without_wgmma(precision: str) -> specs.KernelSpec:
    """CUDA's large-product kernel where there is no wgmma."""
    return _CUDA_TF32 if precision == "tf32" else specs.spec("tile_threads", device.CUDA)


@dataclasses.dataclass(frozen=True)
class Launch:
    """A kernel and how many ways it splits K: one way to compute a product."""

    spec: specs.KernelSpec
    k_splits: int = 1

    @property
    def key(self) -> str:
        """A name for the autotune cache: the spec's stage and template, the split
        (not the operands' element types: a choice holds for every dtype)."""
        template = ",".join(f"{k}={int(v)}" for k, v in self.spec.template)
        return f"{self.spec.stage}[{template}]/{self.k_splits}"

    def reading(self, a_type: str, b_type: str) -> Launch:
        """This launch for operands of element types ``a_type`` and ``b_type``:
        its kernel's instance that reads them as they are where it can
        (converted on load, or in half tiles: :meth:`specs.KernelSpec.reading`),
        the same split."""
        return Launch(self.spec.reading(a_type, b_type), self.k_splits)


# How an operand reaches a kernel (operand_conversions): float32 as it is; a
# half the kernel reads itself, converting each element as it loads it; a half
# kept as it is in half tiles, multiplied on half simdgroup matrices into
# float32 accumulators (Metal, both operands of one half type); a half copied
# as it is into shared memory and multiplied on the tensor cores (half_wgmma,
# half_mma);
# or a half cast to float32 first, by one astype of the whole operand in MLX.
AS_IS, CONVERTED_ON_LOAD, HALF_TILES, CAST = "as is", "converted on load", "half tiles", "cast"
HALF_TENSOR_CORES = "half tensor cores"


def operand_conversions(spec: specs.KernelSpec, a_type: str, b_type: str) -> dict[str, str]:
    """For operands ``a`` and ``b`` of element types ``a_type`` and ``b_type``
    (dtype names), how each reaches ``spec`` (an instance from
    :func:`for_operands`): AS_IS, CONVERTED_ON_LOAD, HALF_TILES, HALF_TENSOR_CORES or CAST."""
    read_as_is = (HALF_TENSOR_CORES if spec.source_file in specs.HALF_TENSOR_CORE_SOURCES
                  else HALF_TILES if spec.reads_half_tiles(*spec.operand_types) else CONVERTED_ON_LOAD)
    return {
        name: AS_IS if given == "float32" else read_as_is if read == given else CAST
        for name, given, read in zip("ab", (a_type, b_type), spec.operand_types)
    }


def heuristic(backend: str, precision: str, p: Plan, wgmma: bool | None = None) -> Launch:
    """The rule's launch for ``p`` (``wgmma`` None: ask the device)."""
    return _heuristic(backend, precision, p, device.has_wgmma() if wgmma is None else wgmma)


@functools.lru_cache(maxsize=4096)  # matmul asks on every call; the answer depends on these only
def _heuristic(backend: str, precision: str, p: Plan, wgmma: bool) -> Launch:
    spec = choose(backend, precision, p, wgmma)
    return Launch(spec, k_splits(backend, spec, p))


def candidates(backend: str, precision: str, p: Plan) -> list[Launch]:
    """What the autotuner times for ``p``: the heuristic's choice first, then
    its neighbours (pipeline depth, tile order, K split) and the other kernels
    that can win somewhere (FMA tile_threads, small_m for few rows)."""
    found = [heuristic(backend, precision, p)]

    def add(spec, splits=(1,)):
        for s in splits:
            launch = Launch(spec, s)
            if launch not in found:
                found.append(launch)

    if backend == device.CUDA:
        if device.has_wgmma():
            float32 = precision != "tf32"
            base = _hopper(precision, p.M)
            default_splits = k_splits(backend, base, p)
            splits = sorted({1, default_splits, 2 * default_splits} if p.K >= 2 * MIN_SPLIT_K else {1})
            add(base, splits)
            t = dict(base.template)
            deepest = t["STAGES"]  # what fits in 227 KB (specs.cuda_wgmma)
            for stages, group_m in ((deepest - 1, 8), (deepest, 4), (deepest, 16)):
                add(specs.cuda_wgmma(base.stage, SPLIT=float32, STAGES=stages, GROUP_M=group_m,
                                     BM=base.block_m, IN_FLIGHT=t["IN_FLIGHT"],
                                     LOOKAHEAD=t["LOOKAHEAD"], TMA=t["TMA"]), splits)
            if float32 and p.batch == 1 and p.M > SMALL_M:
                add(half_split_spec("float32", p.M, p.N))
                if _emulation_runs(p):
                    add(EMULATED)
            if not float32 and p.batch == 1 and p.M > SMALL_M:
                add(HALF_SPLIT_TF32)
        add(_without_wgmma(precision))
        if p.M <= 4 * SMALL_M:
            add(specs.spec("small_m", backend))
        if p.M <= SMALL_M:
            add(specs.spec("small_m_wide", backend))
    elif backend == device.METAL:
        # Every Metal kernel can split K too (kernels/metal/sgemm/: locate_tile); unmeasured
        # on Apple GPUs, so only the autotuner tries it.
        splits = (1, 2, 4) if p.K >= 2 * MIN_SPLIT_K else (1,)
        for stage in ("tile_async", "tile_simdgroup", "tile_threads", "small_m"):
            add(specs.spec(stage, backend), splits)
    return found


def tuned(backend: str, precision: str, p: Plan) -> Launch | None:
    """The autotuner's pick for p's shape class on this device, if it ran."""
    if not tuning_cache.entries():  # nothing tuned: the common case, kept cheap
        return None
    key = tuning_cache.lookup(device.name(), precision, p)
    return None if key is None else _candidate_named(backend, precision, p, key)


@functools.lru_cache(maxsize=1024)
def _candidate_named(backend: str, precision: str, p: Plan, key: str) -> Launch | None:
    """The launch called ``key`` for p: a candidate kernel for p with the K split
    the key names, or None (a stale or corrupt cache entry). The split is taken
    from the key, not matched: shapes of one class can differ in which splits
    the candidates list (it follows K), and a tuned split is valid for any K
    that gives each split at least one k-tile of 32 (a bound that also keeps
    a corrupt count from asking for a partial product per split it names).
    Kept: matmul asks on every call, and the candidates are a dozen specs to build."""
    spec_key, _, splits = key.rpartition("/")
    if not splits.isdigit() or not 1 <= int(splits) <= -(-p.K // 32):
        return None
    for launch in candidates(backend, precision, p):
        if launch.key.rpartition("/")[0] == spec_key:
            return Launch(launch.spec, int(splits))
    return None


def deterministic(backend: str, precision: str, wgmma: bool | None = None) -> Launch:
    """The one launch ``matmul(..., deterministic=True)`` runs on ``backend`` at
    ``precision``, for every shape: the heuristic's kernel for many rows (on
    Hopper tile_wgmma with 128-row blocks, on other CUDA GPUs tile_threads or
    the TF32 pipeline, on Metal tile_async), K not split.

    Why that makes a row's result independent of the rest of the product:
    each of these kernels computes every output from its row of A and column
    of B in an order fixed by K and the kernel alone (k-tile after k-tile),
    and where the output lies in its block, how many blocks there are and
    which batch entry it is in change where it is computed, not how. Not
    chosen by M (small_m, the block heights), not split (the partial sums'
    boundaries follow the tile count), not looked up in the autotune cache
    (its entries are per shape class). One exception, in float32 on Hopper:
    a block whose operands hold an Inf or NaN recomputes its outputs with
    FMAs (kernels/cuda/tile_wgmma.cu), so rows sharing a 128-row block with
    such a row can differ in their last bits from the same rows elsewhere.
    """
    return _deterministic(backend, precision, device.has_wgmma() if wgmma is None else wgmma)


@functools.lru_cache(maxsize=16)
def _deterministic(backend: str, precision: str, wgmma: bool) -> Launch:
    return Launch(choose(backend, precision, None, wgmma))


@functools.cache
def deterministic_chooser(precision: str):
    """choose(backend, plan) -> Launch for ``matmul(..., deterministic=True)``:
    :func:`deterministic`, whatever the plan. (Marked ``deterministic``, which
    :func:`for_operands` honours for half operands.)"""
    choose = lambda backend, _p: deterministic(backend, precision)  # noqa: E731
    choose.deterministic = choose.matmul = True
    return choose


# Chapter 8: operands of one half type on the tensor cores. Where matmul's
# choice for float32 is one of the Hopper tensor-core kernels (the wgmma
# pipeline, the emulations), operands that are both float16 or both bfloat16
# are multiplied as they are by half_wgmma instead: every float32 device of
# those kernels (the 3xTF32 split, the float16 split's scaling) exists to get
# float32 accuracy from the tensor cores, which halves have already. On a CUDA
# GPU without wgmma (Ampere, Ada, later ones), where the choice is the
# large-product kernel (tile_threads' FMAs, the TF32 pipeline), they go to
# half_mma (mma.sync m16n8k16), at the half tensor-core rate where the float32
# kernels ran at the FMA or TF32 one. The small-M kernels' products (M <= 8,
# bound by reading B) go to half_gemv on any GPU with mma.sync; the small-M
# kernels keep a mixed pair and older GPUs, converting halves on load and
# rounding C to the half type themselves.
_HOPPER_TENSOR_CORE_SOURCES = ("tile_wgmma.cu", "half_products.cu", "int8_products.cu")
_WITHOUT_WGMMA = tuple(_without_wgmma(precision) for precision in PRECISIONS)


def for_operands(launch: Launch, backend: str, p: Plan, operand_types: tuple[str, str],
                 float32_out: bool = False, deterministic: bool = False, matmul: bool = False,
                 wgmma: bool | None = None, layer: bool = False) -> Launch:
    """``launch`` (a chooser's launch for ``p``) for operands of element types
    ``operand_types``. For one half type on CUDA, a half tensor-core kernel
    (:func:`half_launch`): half_wgmma where the choice is a Hopper tensor-core
    kernel, half_mma where it is the large-product kernel of a GPU without
    wgmma, and either (by the GPU) where ``matmul`` (the chooser is matmul's)
    for more than SMALL_M rows, whatever the autotuner found for float32
    operands of the shape class; half_gemv where the choice is a small-M
    kernel, on a GPU with mma.sync. Else :meth:`Launch.reading`. ``float32_out``:
    the product as float32, not rounded to the half type (gemm);
    ``deterministic``: ``matmul(..., deterministic=True)``'s launch; ``wgmma``:
    whether the GPU has it (None: ask the device); ``layer``: the product of a
    model's layer (:func:`half_gemv`)."""
    a_type, b_type = operand_types
    one_half_type = backend == device.CUDA and a_type == b_type != "float32"
    if one_half_type:
        has_wgmma = device.has_wgmma() if wgmma is None else wgmma
        large = (launch.spec.source_file in _HOPPER_TENSOR_CORE_SOURCES if has_wgmma
                 else launch.spec in _WITHOUT_WGMMA)
        if large or (matmul and p.M > SMALL_M):
            return half_launch(p, a_type, float32_out, deterministic, wgmma=has_wgmma)
        if launch.spec.stage in specs.ROUNDS_IN_KERNEL and (has_wgmma or device.has_mma_sync()):
            # A token's products (the small-M kernels' rows): half_gemv, or
            # for a layer's token alone half_gemv_one_row, which reads W as
            # MLX's GEMV does where B is x @ W.T's: only a layer's call knows
            # that (the grid is the layout's), and matmul's does not.
            output = "float32" if float32_out else a_type
            if layer and p.M == 1:
                return Launch(half_gemv_one_row(a_type, output), 1)
            return Launch(half_gemv(p, a_type, output, layer), 1)
    reading = launch.reading(a_type, b_type)
    if one_half_type and launch.spec.stage in specs.ROUNDS_IN_KERNEL and launch.k_splits == 1 and not float32_out:
        # The small-M kernels round C themselves: no second kernel to cast it.
        return Launch(reading.spec.rounding_to(a_type), 1)
    return reading


def half_launch(p: Plan, element: str, float32_out: bool = False, deterministic: bool = False,
                wgmma: bool = True) -> Launch:
    """The half tensor-core kernel's launch for ``p`` with operands of half
    type ``element`` (half_wgmma, or without ``wgmma`` half_mma): the block
    (:func:`half_block`), K split where the tiles leave most SMs idle (the
    partial sums then float32, summed and rounded by one more kernel), C
    rounded to ``element`` in the kernel unless ``float32_out`` or split.
    Deterministic: one block shape, K never split."""
    blocks = specs.HALF_WGMMA_BLOCKS if wgmma else specs.HALF_MMA_BLOCKS
    if deterministic:
        bm, bn, splits = (*blocks[0], 1)
    else:
        sms = HOPPER_SMS if wgmma else _multiprocessors()
        bm, bn = half_block(p, wgmma, sms)
        splits = half_k_splits(p, bm, bn, sms)
    output = "float32" if float32_out or splits > 1 else element
    return Launch(_half_spec(element, output, bm, bn, None if float32_out or splits == 1 else element, wgmma),
                  splits)


def half_gemv(p: Plan, element: str, output: str, layer: bool = False) -> specs.KernelSpec:
    """half_gemv's instance for ``p``: where its blocks of 32 columns number at
    least two an SM, blocks of 4 warps, four of them an SM, or for a model's
    ``layer`` (mlx_sgemm.nn) blocks of 8 warps, two an SM; else blocks of 16
    columns and 8 warps, two an SM. 16 warps an SM every way.

    Alone (CUPTI, W not in L2, H200) the blocks of 4 warps are the fastest
    where there are many: 1x11008x4096 `x @ W.T` 24.2 us against 24.9 in
    blocks of 8, 1x32000x4096 63.4 against 64.0, and `x @ W` 1x14336x4096
    31.0 against 36.5 (one wave, where two blocks of 8 an SM leave a second,
    part-empty one). A model's step runs products with no edge between them
    at once: a decode step's gate and up projections (1 x 11008 x 4096 each,
    the same x) take 33.2 us each in blocks of 8 warps, 43.1 in blocks of 4
    (the second product finds few SMs free), 28.9 in blocks of 16 (then the
    output layer 67.8 us against 64.3); the step's GPU busy time 0.652-0.655
    ms against 0.665-0.666 and 0.671-0.675 (a bfloat16 Llama of 4 layers of
    Llama 2 7B's shape; docs/performance-log.md, "A token's products beside
    each other"). Where the blocks are few, blocks of 16 columns make twice as
    many: 1x4096x4096 `x @ W.T` 8.4 us against 9.5 in 128 blocks of 16 warps
    with W in L2, 10.9 against 11.7 with W in memory; 1x1024x4096 4.8 against
    5.9 (docs/performance-log.md, "Half products of few blocks")."""
    if p.tile_count(8, 32) < 2 * _multiprocessors():
        return _half_gemv_spec(element, output, *specs.HALF_GEMV_NARROW)
    return _half_gemv_spec(element, output, *(specs.HALF_GEMV_WIDE_LAYER if layer else specs.HALF_GEMV_WIDE))


@functools.cache
def half_gemv_one_row(element: str, output: str) -> specs.KernelSpec:
    """half_gemv_one_row's instance: a model layer's token alone (M = 1, B
    its weight transposed, x @ W.T), 4 warps a column of C, 64 warps an SM:
    alone it reads W as fast as MLX's GEMV and faster than half_gemv, where
    one warp a column left half the warp slots empty on 4096-row W
    (docs/performance-log.md, "A layer's token alone: MLX's GEMV, four warps
    a column"; the kernel table of docs/journey.md, chapter 8)."""
    return specs.cuda_half_gemv_one_row(element, output)


@functools.cache
def _half_gemv_spec(element: str, output: str, warps: int, min_blocks: int, nt: int) -> specs.KernelSpec:
    return specs.cuda_half_gemv(element, output, WARPS=warps, MIN_BLOCKS=min_blocks, NT=nt)


@functools.cache
def _half_spec(element: str, output: str, bm: int, bn: int, sum_to: str | None = None,
               wgmma: bool = True) -> specs.KernelSpec:
    spec = (specs.cuda_half_wgmma if wgmma else specs.cuda_half_mma)(element, output, BM=bm, BN=bn)
    return dataclasses.replace(spec, sum_to=sum_to) if sum_to else spec


# What a round of half_wgmma's tiles of 128 rows takes, each SM taking a
# tile at a time, by the tiles' columns, against one of 128 columns: 1.27-1.38x
# for 192 columns, 1.5-1.8x for 256 on an H200 (docs/performance-log.md,
# "half_wgmma's tiles counted in rounds" and "half_wgmma's tiles of 192
# columns"), not 1.5x and 2x, for the wider tiles read fewer of the operands'
# bytes a product. Middle values of those ranges.
TILE_COSTS = {128: 1.0, 192: 1.35, 256: 1.65}


# The shortest stretch of K worth a split for the half tensor-core kernels:
# 8 k-tiles of 64. 128x1024x4096 bfloat16 with W in L2 (H200, split_sum
# included): 8 tiles of 128 x 128 split 4 ways 12.1 us, 8 ways 10.9
# (docs/performance-log.md, "Half products of few blocks").
HALF_MIN_SPLIT_K = 512


def half_rows_too_few(p: Plan, sms: int = HOPPER_SMS) -> bool:
    """Whether tiles of 128 rows, K split as finely as HALF_MIN_SPLIT_K lets,
    would leave some of the ``sms`` SMs without a block (:func:`half_block`)."""
    return p.tile_count(128, 128) * max(1, p.K // HALF_MIN_SPLIT_K) < sms


def half_block(p: Plan, wgmma: bool = True, sms: int = HOPPER_SMS) -> tuple[int, int]:
    """The half tensor-core kernel's block for ``p``: 64 rows where C has no
    more, or where tiles of 128 rows, K split as finely as HALF_MIN_SPLIT_K
    lets, would not fill the ``sms`` SMs (128x1024x4096: 8 tiles of 128 x
    128 split 8 ways, 64 blocks, 10.9 us; 16 of 64 x 128 split 8 ways, 10.2
    us; H200, bfloat16, W in L2), else 128; for half_wgmma, the columns (128,
    192 with 128 rows, or 256) whose rounds of tiles (one a Hopper SM at a
    time) take the least time, each round costing TILE_COSTS of a round of
    128-wide ones, the narrower on a tie: it keeps a last round that would
    leave most SMs idle from deciding (512 x 11008: 232 tiles of 192 columns,
    two rounds, against three rounds of 128). half_mma's blocks are 128 wide:
    three stages of 128 x 256 would pass the 99 KB of shared memory an sm_86
    or sm_89 block may have."""
    bm = 64 if p.M <= 64 or half_rows_too_few(p, sms) else 128
    if not wgmma:
        return bm, 128
    rounds = half_wgmma_rounds(p, bm)
    return bm, min(rounds, key=lambda bn: rounds[bn] * TILE_COSTS[bn])


def half_wgmma_rounds(p: Plan, bm: int) -> dict[int, int]:
    """{columns: rounds of half_wgmma's tiles of ``bm`` rows over a Hopper's
    SMs} for each width its blocks of ``bm`` rows may have, narrowest first."""
    return {bn: -(-p.tile_count(bm, bn) // HOPPER_SMS) for bn in TILE_COSTS if (bm, bn) in specs.HALF_WGMMA_BLOCKS}


def half_k_splits(p: Plan, bm: int, bn: int, sms: int = HOPPER_SMS) -> int:
    """K splits for a half tensor-core kernel on a GPU of ``sms`` SMs: where the
    output's tiles fill less than half of them and K is long, as many as fill
    them (each split at least HALF_MIN_SPLIT_K)."""
    tiles = p.tile_count(bm, bn)
    return 1 if 2 * tiles >= sms else _splits_filling(p, tiles, specs.HALF_K_TILE, sms, HALF_MIN_SPLIT_K)


def _multiprocessors() -> int:
    """The CUDA GPU's SMs where the driver says, else a Hopper's (a wrong count
    costs speed, never a result: it only decides K splits)."""
    return device.cuda_multiprocessors() or HOPPER_SMS


@functools.cache
def chooser(precision: str, layer: bool = False):
    """choose(backend, plan) -> Launch for matmul: the autotuner's pick where
    there is one, else the heuristic. ``layer``: for a model's layer
    (mlx_sgemm.nn), whose products a model's step may run beside each other
    (:func:`half_gemv`)."""
    choose = lambda backend, p: tuned(backend, precision, p) or heuristic(backend, precision, p)  # noqa: E731
    choose.matmul = True  # for_operands: a pair of one half type goes to half_wgmma, whatever was tuned
    choose.layer = layer
    return choose


def variants(backend: str) -> list[specs.KernelSpec]:
    """Every kernel ``matmul`` may run on ``backend`` (the compile-count bound)."""
    found = [specs.spec("small_m", backend)]
    if backend == device.CUDA:
        found.append(specs.spec("small_m_wide", backend))
    for precision in PRECISIONS:
        specs_for_precision = [choose(backend, precision, None)]
        if backend == device.CUDA and device.has_wgmma():
            specs_for_precision += wgmma_variants(precision)
        for spec in specs_for_precision:
            if spec not in found:
                found.append(spec)
    return found
