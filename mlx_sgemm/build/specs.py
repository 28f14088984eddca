"""The catalogue of kernels: for every stage and backend, which source file, which
compile-time constants, and how a launch is shaped.

A :class:`KernelSpec` is the single description both of what is registered with
``mx.fast.metal_kernel`` / ``mx.fast.cuda_kernel`` (see :mod:`mlx_sgemm.build.registry`)
and of what the no-GPU checks compile (the Metal CPU harness, the nvcc compile
check), so the two cannot drift apart.

Every kernel has the same interface: inputs ``a`` (..., M, K), ``b`` (..., K, N)
and ``params`` (int32, layout in :mod:`mlx_sgemm.dispatch.problem`), output ``c``
(..., M, N), float32 (or a half type: ``output_type``). Each threadgroup computes one
``block_m x block_n`` tile of one batch entry; the grid enumerates those tiles on its x
axis (a persistent kernel's blocks walk several).

Element types. A kernel that ``converts_on_load`` reads float16 and bfloat16
operands as they are, each element converted to float32 as it is loaded
(exactly: every half value is a float32 value), and computes and accumulates in
float32; :meth:`KernelSpec.reading` gives its instance for a pair of element
types (``operand_types``), a spec of its own. On CUDA the types are the
template types ``TA`` and ``TB`` (MLX writes ``using TA = __nv_bfloat16;``), and
in the kernel's name: MLX keeps compiled CUDA modules by name alone. On Metal
they are the element type of the pointers in the signature MLX writes (``const
device bfloat16_t* a``), which the Metal headers' ``Operand<P>`` takes as its
template parameter; MLX names a Metal kernel after its inputs' dtypes.

A Metal kernel with ``half_tiles`` (``tile_simdgroup``, ``small_m``,
``tile_async``, ``gemm``) keeps operands that are both float16 or both bfloat16
as they are in threadgroup tiles of that type, multiplied on
``simdgroup_matrix<half / bfloat, 8, 8>`` into float32 accumulators (MLX's
steel GEMM does the same; ``sgemm::TileElement`` in kernels/metal/sgemm/
simdgroup.h decides it from the pointer types, so one body serves every
type). A mixed pair (a half and a float32 operand, or float16 with bfloat16)
is converted to float32 on load where the kernel converts on load, else cast
first. Half tiles are not measured to be faster: there is no Apple GPU here.

CUDA's ``half_wgmma`` (:func:`cuda_half_wgmma`, chapter 8) reads operands of
one half type as they are on Hopper's tensor cores, and ``half_mma``
(:func:`cuda_half_mma`) on those of GPUs without wgmma (mma.sync, sm_80 on),
an instance per half type and output type (their template types ``TA``,
``TB``, ``TC``); the small-M
kernels have instances that round C to their operands' half type
(:meth:`KernelSpec.rounding_to`).

The other kernels (CUDA's ``tile_async`` and ``tile_wgmma``, and Metal's
``tile_async`` and ``gemm`` for a mixed pair) copy bytes
into tiles that the matrix units read as float32 (cp.async, TMA,
simdgroup_async_copy), which leaves no step to convert in: their operands are
cast to float32 first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import sources

INPUT_NAMES = ("a", "b", "params")
# The CUDA kernels that can write C in their operands' half type themselves
# (KernelSpec.rounding_to): the small-M kernels, whose products are too short
# for a separate rounding pass to hide.
ROUNDS_IN_KERNEL = ("small_m", "small_m_wide")
# The CUDA kernels that multiply a pair of one half type on the tensor cores as
# they are (chapter 8): wgmma on Hopper, mma.sync elsewhere.
HALF_TENSOR_CORE_SOURCES = ("half_wgmma.cu", "half_mma.cu", "half_gemv.cu")
OUTPUT_NAMES = ("c",)
BACKENDS = ("metal", "cuda")
# The element types an operand may have, by MLX's dtype names.
ELEMENT_TYPES = ("float32", "float16", "bfloat16")
FLOAT32_OPERANDS = ("float32", "float32")


@dataclass(frozen=True)
class KernelSpec:
    stage: str
    backend: str
    source_file: str  # under kernels/<backend>/
    threadgroup: tuple[int, int, int]
    block_m: int  # output rows per threadgroup
    block_n: int  # output columns per threadgroup
    template: tuple[tuple[str, int | bool | str], ...] = ()  # a str: a dtype (a template type)
    shared_memory: int = 0  # dynamic shared memory in bytes (CUDA only)
    # CUDA only: blocks that must fit on one SM at once. Caps registers per thread
    # through __launch_bounds__ (see kernels/cuda/sgemm/params.cuh); 0 leaves them free.
    min_blocks: int = 0
    # Macros defined ahead of the headers the stage includes, for what they
    # must know first (the launch bounds, TMA, gemm's alpha/beta inputs).
    defines: tuple[tuple[str, int], ...] = ()
    # Whether MLX must hand the kernel row-contiguous copies. Kernels that read
    # a_strides / b_strides for their matrix dims take any layout as it is
    # (transposed views, slices) and set this False: no copy.
    ensure_row_contiguous: bool = False
    # Input names, in order. Every kernel reads a, b and params; a fused
    # alpha/beta kernel also reads c_in and scalars.
    inputs: tuple[str, ...] = INPUT_NAMES
    # Output names: c, and for kernels that copy by TMA a 2 x 128-byte slot per
    # block for its tensor maps ("maps"; kernels/cuda/tile_wgmma.cu).
    outputs: tuple[str, ...] = OUTPUT_NAMES
    # Kernels outside the a/b/params interface (the INT8 emulation's): the
    # dtypes of their inputs, for the compile checks (MLX reads them from the
    # arrays), and of their outputs (MLX's output_dtypes). Empty: a and b
    # float32, params int32; every output float32.
    input_dtypes: tuple[str, ...] = ()
    output_dtypes: tuple[str, ...] = ()
    # Whether the kernel reads float16 / bfloat16 operands itself, converting
    # each element to float32 as it loads it (see the module docstring); False:
    # it reads float32 alone.
    converts_on_load: bool = False
    # Metal: whether operands of one half type (both float16, or both bfloat16)
    # stay in tiles of that type, multiplied on half simdgroup matrices into
    # float32 accumulators (see the module docstring).
    half_tiles: bool = False
    # The element types of a and b this instance reads (ELEMENT_TYPES; float32
    # unless converts_on_load or half_tiles, or a half tensor-core instance's): see reading().
    operand_types: tuple[str, str] = FLOAT32_OPERANDS
    # CUDA: a persistent kernel's grid has a block an SM or so for each output
    # matrix (params[P_BLOCKS_PER_MATRIX] of them where the spec has tensor
    # maps; the emulations' fallback, one matrix, reads its grid), each walking
    # that matrix's tiles; otherwise a block a tile (Plan.grid).
    persistent: bool = False
    # With K split: the dtype the partial products are summed into, rounded
    # once, by one kernel (split_sum.cu); None: summed by mx.sum in float32.
    sum_to: str | None = None
    # Whether the kernel takes a layer's operands as it holds them, x @ W.T of
    # x at its own rank and W (N x K) itself (launcher.layer_call), not matmul's
    # a and b (a transposed view of W) as the plan reshapes them.
    layer_operands: bool = False
    # The k-tile: a K split's length is a multiple of it (the TMA copies whole
    # k-tiles from the split's start, which must not reach into the next split).
    k_tile: int = 32

    @property
    def name(self) -> str:
        """The kernel's name for MLX. A CUDA kernel includes its files by path
        (:meth:`compiled_source`), so its name carries their digest, and that
        of its macros: MLX builds one module per name, and two specs of one
        stage with other macros (TMA's clusters, say) must not share it (the
        second would run with the first's macros)."""
        if self.backend == "cuda":
            digest = sources.digest(self.backend, self.source_file, extra=self._defines())
            return f"sgemm_{self.stage}_{digest}"
        return f"sgemm_{self.stage}"

    @property
    def input_names(self) -> tuple[str, ...]:
        return self.inputs

    def reading(self, a_type: str, b_type: str) -> KernelSpec:
        """This kernel for operands of element types ``a_type`` and ``b_type``
        (ELEMENT_TYPES): its instance that reads them as they are where it
        converts on load, or keeps them in half tiles (one half type for both),
        else this float32 instance (the operands are then cast to float32
        before it)."""
        for name, t in (("a", a_type), ("b", b_type)):
            if t not in ELEMENT_TYPES:
                raise ValueError(f"{name}'s element type must be one of {ELEMENT_TYPES}, got {t!r}")
        if not (self.converts_on_load or self.reads_half_tiles(a_type, b_type)):
            return self
        return dataclasses.replace(self, operand_types=(a_type, b_type))

    def reads_half_tiles(self, a_type: str, b_type: str) -> bool:
        """Whether operands of these element types stay in tiles of their own
        half type (half_tiles, and one half type for both)."""
        return self.half_tiles and a_type == b_type != "float32"

    @property
    def template_args(self) -> tuple[tuple[str, int | bool | str], ...]:
        """The template MLX is handed: the spec's constants, and on CUDA, for a
        kernel that converts on load, its operands' element types as ``TA`` and
        ``TB`` (dtype names). On Metal the element type is the pointers' type in
        MLX's signature, so it needs no template argument."""
        if self.backend == "cuda" and self.converts_on_load:
            # An instance that rounds C to a half type says so in its name too.
            rounds = (("TC", self.output_type),) if self.output_type != "float32" else ()
            return (*self.template, ("TA", self.operand_types[0]), ("TB", self.operand_types[1]), *rounds)
        return self.template

    @property
    def output_names(self) -> tuple[str, ...]:
        return self.outputs

    def rounding_to(self, output: str) -> KernelSpec:
        """This CUDA small-M kernel's instance that writes C as ``output`` (its
        operands' half type), each result rounded once, instead of float32
        (ROUNDS_IN_KERNEL)."""
        if self.stage not in ROUNDS_IN_KERNEL or output not in self.operand_types:
            raise ValueError(f"{self.stage} reading {self.operand_types} cannot write {output}")
        return dataclasses.replace(self, output_dtypes=(output,))

    @property
    def multiplies_halves(self) -> bool:
        """Whether the matrix units multiply this instance's operands in their
        own half type (Metal's half tiles, CUDA's half_wgmma and half_mma)."""
        return self.reads_half_tiles(*self.operand_types) or self.source_file in HALF_TENSOR_CORE_SOURCES

    @property
    def output_type(self) -> str:
        """The dtype of the kernel's output ``c``: float32, but for an instance
        that rounds to its operands' type."""
        return self.output_dtypes[0] if self.output_dtypes else "float32"

    @property
    def rounds_a_to_tf32(self) -> bool:
        """Whether A goes in rounded to nearest TF32 by a pass before the kernel
        (:func:`cuda_tf32_round`): tile_wgmma at TF32 copying A by the TMA,
        whose tensor cores read A from shared memory as the TMA left it and
        would truncate it. (Its instances without the TMA round each k-tile of
        A in shared memory on its way in: :attr:`rounds_a_tiles_to_tf32`; B's
        fragments every instance rounds in registers.)"""
        return self.tf32_wgmma and bool(dict(self.template)["TMA"])

    @property
    def rounds_a_tiles_to_tf32(self) -> bool:
        """tile_wgmma at TF32 without the TMA: its producer rounds each k-tile of
        A to nearest TF32 in shared memory, where cp.async left it."""
        return self.tf32_wgmma and not dict(self.template)["TMA"]

    @property
    def tf32_wgmma(self) -> bool:
        """tile_wgmma at TF32 (one pass on the tensor cores, no 3xTF32 split)."""
        return self.source_file == "tile_wgmma.cu" and not dict(self.template)["SPLIT"]

    @property
    def tensor_maps(self) -> bool:
        """Whether the kernel reads tensor maps of A and B from ``params``
        (mlx_sgemm/build/tensormap.py) and writes its copies of them to ``maps``."""
        return "maps" in self.outputs

    def source(self) -> str:
        """The kernel body as written, without its include lines (MLX writes
        the signature around it)."""
        return sources.body(self.backend, self.source_file)

    def _defines(self) -> str:
        """This kernel's own macros, defined ahead of the shared header."""
        defines = list(self.defines)
        if self.min_blocks:
            threads = self.threadgroup[0] * self.threadgroup[1] * self.threadgroup[2]
            defines += [("SGEMM_MAX_THREADS", threads), ("SGEMM_MIN_BLOCKS", self.min_blocks)]
        return "".join(f"#define {name} {value}\n" for name, value in defines)

    def header(self) -> str:
        """The headers the stage file includes, as one text, preceded by this
        kernel's own macros."""
        return self._defines() + sources.headers_text(self.backend, self.source_file)

    # What MLX is handed (mlx_sgemm.build.registry) and the no-GPU checks compile
    # (mlx_sgemm.build.signatures): on CUDA, includes of the body and header files
    # (sources.include: MLX's per-call cost grows with the strings' length);
    # on Metal the texts without comments.
    def compiled_source(self) -> str:
        if self.backend != "cuda":
            return sources.for_compiler(self.source())
        # MLX gives the kernel a shape / strides / ndim parameter for an input
        # when the source it is handed names one: an include names none, so
        # the ones the body reads are named here.
        body = self.source()
        named = [f"{n}_{what}" for n in self.input_names for what in ("shape", "strides", "ndim")
                 if f"{n}_{what}" in body]
        mention = f"// reads {', '.join(named)}\n" if named else ""
        return mention + sources.include(self.backend, self.source_file)

    def line_origins(self):
        """Metal: where each line of compiled_header() and compiled_source()
        comes from, (``kernels/metal/<file>``, line), for the checker's
        findings and clang's diagnostics (:func:`sources.compiled_origins`)."""
        return sources.compiled_origins(self.backend, self.source_file, self._defines())

    def compiled_header(self) -> str:
        if self.backend != "cuda":
            return sources.for_compiler(self.header())
        return self._defines() + "".join(
            sources.include(self.backend, h) for h in sources.includes(self.backend, self.source_file))


def _smem_tile_floats(rows: int, cols: int) -> int:
    """Floats of a rows x cols shared-memory tile in either orientation, rows
    padded as sgemm::padded pads them (sgemm::SmemTile::MAX_FLOATS)."""
    pad = lambda extent: extent + (8 if extent >= 64 else 4)  # noqa: E731
    return max(rows * pad(cols), cols * pad(rows))


def _split_tile_floats(lines: int, bk: int) -> int:
    """Floats of a lines x bk k-tile split into big and small parts
    (sgemm::SplitTile::FLOATS)."""
    return lines * bk * 2


def _matrix_unit_block(loaders: int, min_blocks: int = 0) -> dict:
    """The launch of a matrix-unit stage's block: 8 multiplying warps, and
    ``loaders`` more (a warpgroup, or none). With loaders, one block per SM:
    the cap (65536 / 384 registers at entry) is what the warpgroups'
    setmaxnreg redistributes (sgemm::SplitRing)."""
    return dict(threadgroup=(256 + 32 * loaders, 1, 1), min_blocks=1 if loaders else min_blocks)


def cuda_warp_tiled(stage: str = "tile_simdgroup", *, BK: int = 16, LOADERS: int = 4,
                    STAGES: int = 6) -> KernelSpec:
    """tile_simdgroup on CUDA: 8 warps, each a 64x32 warp tile of m16n8k8
    tensor-core products, on k-tiles split once into big and small TF32 parts
    (kernels/cuda/tile_simdgroup.cu). LOADERS = 4: a warpgroup of its own loads
    them into a ring of STAGES shared-memory buffers (Hopper: setmaxnreg); 0:
    the 8 warps load too, into two buffers (STAGES = 2).

    Six buffers measured faster than four (H200, 42.7 / 44.4 against 41.8 /
    43.0 TFLOP/s at 4096^3 / 8192^3; docs/performance-log.md)."""
    bm, bn = 128, 128
    return KernelSpec(
        stage=stage, backend="cuda", source_file="tile_simdgroup.cu", block_m=bm, block_n=bn,
        template=(("BM", bm), ("BN", bn), ("BK", BK), ("WM", 64), ("WN", 32), ("LOADERS", LOADERS),
                  ("STAGES", STAGES)),
        shared_memory=STAGES * (_split_tile_floats(bm, BK) + _split_tile_floats(bn, BK)) * 4,
        converts_on_load=True,
        **_matrix_unit_block(LOADERS),
    )


def cuda_pipelined(
    stage: str = "tile_async", *, SPLIT: bool = True, STAGES: int = 4, BK: int = 16,
    GROUP_M: int = 8, min_blocks: int = 0, LOADERS: int = 4, SPLIT_STAGES: int = 4,
) -> KernelSpec:
    """tile_async on CUDA: a ring of STAGES shared-memory k-tiles fed by cp.async.

    LOADERS = 4 (3xTF32 on Hopper: setmaxnreg): a warpgroup of its own issues
    the copies and splits each landed k-tile into a ring of SPLIT_STAGES split
    k-tiles for the 8 multiplying warps (sgemm::SplitRing); 208 KB of shared
    memory at BK = 16. H200, 4096^3 / 8192^3: 49.4-50.6 / 51.7-51.9 TFLOP/s,
    against 42.8 / 45.3 with the 8 warps copying and splitting too (BK = 32,
    two stages; docs/performance-log.md, "tile_simdgroup and tile_async: a
    loading warpgroup").
    LOADERS = 0: the 8 warps copy, split and multiply, one barrier a k-tile
    (TF32, and GPUs without setmaxnreg)."""
    if LOADERS not in (0, 4) or (LOADERS and not SPLIT):
        raise ValueError(f"LOADERS must be 0, or 4 with SPLIT, got LOADERS={LOADERS}, SPLIT={SPLIT}")
    bm, bn = 128, 128
    stage_floats = _smem_tile_floats(bm, BK) + _smem_tile_floats(BK, bn)
    split_floats = _split_tile_floats(bm, BK) + _split_tile_floats(bn, BK)
    return KernelSpec(
        stage=stage, backend="cuda", source_file="tile_async.cu", block_m=bm, block_n=bn,
        template=(("BM", bm), ("BN", bn), ("BK", BK), ("WM", 64), ("WN", 32),
                  ("STAGES", STAGES), ("SPLIT", SPLIT), ("GROUP_M", GROUP_M), ("LOADERS", LOADERS),
                  ("SPLIT_STAGES", SPLIT_STAGES if LOADERS else 0)),
        # STAGES k-tiles in flight, and with SPLIT the split k-tiles: a ring of
        # SPLIT_STAGES with loaders, else two (one being multiplied, one being
        # split; kernels/cuda/tile_async.cu).
        shared_memory=(STAGES * stage_floats
                       + (SPLIT_STAGES if LOADERS else 2 * bool(SPLIT)) * split_floats) * 4,
        **_matrix_unit_block(LOADERS, min_blocks),
    )


def cuda_wgmma(
    stage: str = "tile_wgmma", *, SPLIT: bool = True, STAGES: int | None = None, BK: int = 32,
    GROUP_M: int = 8, LOOKAHEAD: int = 2, BM: int = 128, IN_FLIGHT: bool = False, TMA: int = 0,
) -> KernelSpec:
    """Hopper (sm_90a): a producer warpgroup feeding 2 consumer warpgroups of
    wgmma m64nBM products through a ring of STAGES shared-memory stages, BM x 128
    blocks, BM in (32, 64, 128), or 256 without SPLIT (kernels/cuda/tile_wgmma.cu).
    STAGES defaults to what fits in the 227 KB an H100/H200 block may have (at
    BM = 128: 4 with SPLIT, A's big and small parts and B; 6 without). LOOKAHEAD: k-tiles of copies in flight behind the one
    the producer hands over (< STAGES). IN_FLIGHT (TF32 only): one k-tile's
    products stay in flight across the next k-tile's barrier. TMA (TF32 only):
    the TMA copies what the tensor maps describe (row-major operands)."""
    if TMA not in (0, 1) or (TMA and SPLIT):
        raise ValueError(f"TMA must be 0 or 1, and 0 with SPLIT (3xTF32 splits A on its way in), got TMA={TMA}")
    bm, bn = BM, 128
    a_floats = bm * BK  # sgemm::SwizzledTile: no padding (BK = 32: 128-byte rows)
    stage_floats = (2 if SPLIT else 1) * a_floats + _smem_tile_floats(BK, bn)
    if STAGES is None:  # at most 7: two named barriers a stage, 15 in all
        STAGES = min(7, (227 * 1024 - 1024) // (4 * stage_floats))
    return KernelSpec(
        stage, "cuda", "tile_wgmma.cu", (384, 1, 1), bm, bn,
        (("BM", bm), ("BN", bn), ("BK", BK), ("STAGES", STAGES), ("SPLIT", SPLIT),
         ("GROUP_M", GROUP_M), ("LOOKAHEAD", LOOKAHEAD), ("IN_FLIGHT", bool(IN_FLIGHT)),
         ("TMA", int(TMA))),
        shared_memory=STAGES * stage_floats * 4 + 1024,  # + room to align the ring to 1 KB
        # One block per SM: the cap (65536 / 384 registers at entry) is what the
        # warpgroups' setmaxnreg redistributes.
        min_blocks=1,
        outputs=("c", "maps") if TMA else OUTPUT_NAMES,
        defines=(("SGEMM_TENSOR_MAPS", 1),) if TMA else (),
    )


def cuda_half_wgmma(element: str = "bfloat16", output: str | None = None, *, BM: int = 128, BN: int = 256,
                    STAGES: int | None = None, GROUP_M: int = 8) -> KernelSpec:
    """Chapter 8 on Hopper (kernels/cuda/half_wgmma.cu): operands of one half
    type ``element`` ("float16" or "bfloat16") multiplied on wgmma as they are,
    float32 accumulators, C rounded once to ``output`` (default: ``element``;
    "float32" for split-K's partial sums and gemm). BM x BN blocks (BM 64 or
    128, BN 128 or 256, or 192 with BM 128) of a producer and two consumer
    warpgroups, STAGES k-tiles of 64 in flight (default: as many as fit in 227
    KB, at most 8), a block an SM walking its matrix's tiles."""
    output = _half_output(element, output)
    stage_bytes = (BM + BN) * HALF_K_TILE * 2
    if STAGES is None:
        STAGES = min(8, (227 * 1024 - 2048) // stage_bytes)
    return KernelSpec(
        "half_wgmma", "cuda", "half_wgmma.cu", (384, 1, 1), BM, BN,
        (("BM", BM), ("BN", BN), ("STAGES", STAGES), ("GROUP_M", GROUP_M),
         ("TA", element), ("TB", element), ("TC", output)),
        shared_memory=STAGES * stage_bytes + 1024,  # + room to align the ring to 1 KB
        min_blocks=1,  # the register cap setmaxnreg redistributes (sgemm::BulkRing)
        outputs=("c", "maps"),
        output_dtypes=(output, "float32"),
        operand_types=(element, element),
        persistent=True,
        k_tile=HALF_K_TILE,
    )


def _half_output(element: str, output: str | None) -> str:
    """The output type of a half tensor-core kernel for operands of half type
    ``element`` asked to write ``output`` (None: ``element``), checked."""
    if element not in ("float16", "bfloat16"):
        raise ValueError(f"element must be float16 or bfloat16, got {element!r}")
    output = element if output is None else output
    if output not in (element, "float32"):
        raise ValueError(f"output must be {element!r} or 'float32', got {output!r}")
    return output


def cuda_half_mma(element: str = "bfloat16", output: str | None = None, *, BM: int = 128, BN: int = 128,
                  STAGES: int = 3, GROUP_M: int = 8) -> KernelSpec:
    """Chapter 8 without wgmma (kernels/cuda/half_mma.cu; Ampere, Ada, any GPU
    from sm_80 on): operands of one half type ``element`` multiplied on
    mma.sync m16n8k16 as they are, float32 accumulators, C rounded once to
    ``output`` (as :func:`cuda_half_wgmma`). BM x BN blocks (BM 64 or 128, BN
    128 or 256) of 8 warps, a ring of STAGES k-tiles of 64 filled by cp.async.
    Three stages of 128 x 128 take 96 KB, which every such GPU gives a block
    (sm_86 and sm_89 at most 99 KB; an A100 163 KB)."""
    output = _half_output(element, output)
    return KernelSpec(
        "half_mma", "cuda", "half_mma.cu", (256, 1, 1), BM, BN,
        (("BM", BM), ("BN", BN), ("STAGES", STAGES), ("GROUP_M", GROUP_M),
         ("TA", element), ("TB", element), ("TC", output)),
        shared_memory=STAGES * (BM + BN) * HALF_K_TILE * 2,
        output_dtypes=(output,),
        operand_types=(element, element),
        k_tile=HALF_K_TILE,
    )


def cuda_half_gemv(element: str = "bfloat16", output: str | None = None, *, NT: int = 2, WARPS: int = 16,
                   IN_FLIGHT: int = 2, MIN_BLOCKS: int = 1, ONE_ROW: int = 8) -> KernelSpec:
    """Chapter 8 for a token's products (kernels/cuda/half_gemv.cu; sm_80 on):
    a few rows of A (blocks of 8) against B of one half type ``element``, on
    mma.sync m16n8k16 with B's runs read straight into the fragments, C rounded
    once to ``output`` (as :func:`cuda_half_wgmma`). Blocks of 16 NT columns, of
    WARPS warps taking turns down K, each loading 2 IN_FLIGHT chunks of B
    ahead; registers capped so that MIN_BLOCKS blocks fit on an SM. One row
    of A against column-major B: a warp 16 NT / WARPS whole columns, ONE_ROW
    loads of B in flight a lane (0: the tensor-core way there too)."""
    output = _half_output(element, output)
    return KernelSpec(
        "half_gemv", "cuda", "half_gemv.cu", (32 * WARPS, 1, 1), 8, 16 * NT,
        (("NT", NT), ("WARPS", WARPS), ("IN_FLIGHT", IN_FLIGHT), ("ONE_ROW", ONE_ROW), ("TA", element), ("TB", element),
         ("TC", output)),
        min_blocks=MIN_BLOCKS,
        output_dtypes=(output,),
        operand_types=(element, element),
    )


def cuda_half_gemv_one_row(element: str = "bfloat16", output: str | None = None, *, UNROLL: int = 2,
                           PARTS: int = 4, MIN_BLOCKS: int = 8) -> KernelSpec:
    """Chapter 8 for a model layer's token alone (kernels/cuda/half_gemv_one_row.cu):
    each row of A by itself against B of one half type ``element``, as MLX's
    GEMV reads W (x @ W.T: a row of W a column of C, in 16-byte runs), FMAs in
    float32, C rounded once to ``output``. Blocks of 8 warps, PARTS of them a
    column of C (so 8 / PARTS columns a block), UNROLL runs in flight a lane,
    registers capped so that MIN_BLOCKS blocks (64 warps) fit on an SM. It
    takes x and W as a layer holds them (``layer_operands``)."""
    output = _half_output(element, output)
    return KernelSpec(
        "half_gemv_one_row", "cuda", "half_gemv_one_row.cu", (256, 1, 1), 1, 8 // PARTS,
        (("UNROLL", UNROLL), ("PARTS", PARTS), ("TA", element), ("TB", element), ("TC", output)),
        min_blocks=MIN_BLOCKS,
        layer_operands=True,
        output_dtypes=(output,),
        operand_types=(element, element),
    )


def half_gemv_specs() -> list[KernelSpec]:
    """Every half_gemv instance matmul may run (kernel_choice.half_gemv): both
    half types, rounding to the type or writing float32 (gemm), each block shape."""
    return [cuda_half_gemv(element, output, WARPS=warps, MIN_BLOCKS=min_blocks, NT=nt)
            for element in ("float16", "bfloat16") for output in (element, "float32")
            for warps, min_blocks, nt in (HALF_GEMV_NARROW, HALF_GEMV_WIDE, HALF_GEMV_WIDE_LAYER)]


def half_gemv_one_row_specs() -> list[KernelSpec]:
    """Every half_gemv_one_row instance a layer may run: each half type,
    rounding to it (a layer's product is never gemm's float32)."""
    return [cuda_half_gemv_one_row(element) for element in ("float16", "bfloat16")]


# half_gemv's (WARPS, MIN_BLOCKS, NT): where its blocks of 32 columns are few,
# blocks of 16 columns, 8 warps, two an SM (twice the blocks); where they are
# many, four blocks of 4 warps an SM, or for a model's layer two of 8
# (kernel_choice.half_gemv).
HALF_GEMV_NARROW, HALF_GEMV_WIDE, HALF_GEMV_WIDE_LAYER = (8, 2, 1), (4, 4, 2), (8, 2, 2)


def cuda_split_sum(output: str) -> KernelSpec:
    """The K splits' partial products summed in order and rounded once to
    ``output`` (kernels/cuda/split_sum.cu): 256 threads, 4 outputs each."""
    return KernelSpec(
        "split_sum", "cuda", "split_sum.cu", (256, 1, 1), 1, 1024, (("TC", output),),
        inputs=("partials", "params"), outputs=("c",),
        input_dtypes=("float32", "int32"), output_dtypes=(output,),
    )


def cuda_tf32_round() -> KernelSpec:
    """x rounded to nearest TF32 (kernels/cuda/tf32_round.cu): tile_wgmma's A
    at TF32 (KernelSpec.rounds_a_to_tf32). 256 threads, 4 elements each."""
    return KernelSpec(
        "tf32_round", "cuda", "tf32_round.cu", (256, 1, 1), 1, 1024, (),
        ensure_row_contiguous=True, inputs=("x", "params"), outputs=("y",),
        input_dtypes=("float32", "int32"), output_dtypes=("float32",),
    )


# half_wgmma's k-tile: 64 halves, one 128-byte swizzle row (sgemm::HALF_K_TILE).
HALF_K_TILE = 64


def cuda_small_m(BN: int = 32, WARPS: int = 8, STAGES: int = 4) -> KernelSpec:
    """small_m on CUDA (kernels/cuda/small_m.cu): blocks of 8 rows of C and BN
    columns, 32 * WARPS threads walking K through a ring of cp.async windows of
    16 * threads elements of B and 8 x (16 * threads / BN) of A: STAGES windows
    of float32, and as many windows of the operands' element types as fit in
    their bytes (twice as many of halves: the same bytes of B in flight).
    block_n and the shared memory follow from the template; min_blocks is what
    fits in an SM's shared memory, with at least 96 registers a thread."""
    threads = 32 * WARPS
    window_k = 16 * threads // BN
    row_slots = threads // (BN // 4) // max(1, 32 // (BN // 4))  # the kernel's ROW_SLOTS
    slots = max(row_slots, WARPS // (BN // 4))  # and PARTS
    shared = max(STAGES * 4 * (16 * threads + 8 * window_k), 4 * slots * 8 * BN)
    fit = (228 * 1024) // (shared + 1024)  # an SM's shared memory, 1 KB reserved a block
    return KernelSpec(
        "small_m", "cuda", "small_m.cu", (threads, 1, 1), 8, BN,
        (("BN", BN), ("WARPS", WARPS), ("STAGES", STAGES)),
        shared_memory=shared,
        min_blocks=max(1, min(fit, 65536 // (96 * threads))),
        converts_on_load=True,
    )


def cuda_small_m_wide(WARPS: int = 8, U: int = 4) -> KernelSpec:
    """small_m_wide on CUDA (kernels/cuda/small_m_wide.cu): blocks of 4 rows and
    128 columns of C, 32 * WARPS threads loading B straight into registers; for
    a row-major B, U chunks of 4 rows of float32 in flight per warp (2 U of
    halves, in the same registers)."""
    return KernelSpec(
        "small_m_wide", "cuda", "small_m_wide.cu", (32 * WARPS, 1, 1), 4, 128,
        (("WARPS", WARPS), ("U", U)),
        min_blocks=1,  # registers capped to what lets the block launch at all
        converts_on_load=True,
    )


def cuda_int8_residue_gemm(STAGES: int = 4, GROUP_M: int = 8) -> KernelSpec:
    """The INT8 emulation's modular products (kernels/cuda/int8_residue_gemm.cu):
    int8 residues of A [s, M, Kp] and of B^T [s, N, Kp] into int32 [s, M, N],
    128 x 128 blocks of 8 warps of 64 x 32, k-tiles of 64 bytes in a ring of
    STAGES cp.async stages (rows padded to 80 bytes). Two blocks an SM: 128
    registers a thread."""
    bm, bn, bk = 128, 128, 64
    return KernelSpec(
        "int8_residue_gemm", "cuda", "int8_residue_gemm.cu", (256, 1, 1), bm, bn,
        (("BM", bm), ("BN", bn), ("BK", bk), ("WM", 64), ("WN", 32), ("STAGES", STAGES),
         ("GROUP_M", GROUP_M)),
        shared_memory=STAGES * (bm + bn) * (bk + 16),
        min_blocks=2,
        inputs=("ra", "rb", "params"),
        outputs=("products",),
        input_dtypes=("int8", "int8", "int32"),
        output_dtypes=("int32",),
    )


# The INT8 emulation on Hopper (mlx_sgemm/emulation/gpu.py): residues in
# swizzled tiles, their wgmma products reduced to residues, the CRT.
RESIDUE_TILE_M, RESIDUE_TILE_N = 128, 256  # lines per residue tile: the products' BM, BN


def cuda_int8_line_stats() -> KernelSpec:
    """Each line's largest, total and smallest nonzero magnitude and its
    norm exponent, of A's rows and B^T's in one launch, 8 lines a block, any
    strides (kernels/cuda/int8_line_stats.cu)."""
    return KernelSpec(
        "int8_line_stats", "cuda", "int8_line_stats.cu", (256, 1, 1), 8, 1,
        inputs=("a", "bt", "params"), outputs=("a_stats", "b_stats"),
        input_dtypes=("float32", "float32", "int32"), output_dtypes=("float32", "float32"),
    )


def cuda_int8_residues() -> KernelSpec:
    """The int8 residues of one operand's lines, scaled per line, for s moduli,
    in the products' swizzled tiles (kernels/cuda/int8_residues.cu)."""
    return KernelSpec(
        "int8_residues", "cuda", "int8_residues.cu", (256, 1, 1), 1, 16,
        inputs=("x", "stats", "choice", "params"), outputs=("residues",),
        input_dtypes=("float32", "float32", "int32", "int32"), output_dtypes=("int8",),
    )


def cuda_int8_products(STAGES: int = 4, GROUP_M: int = 8) -> KernelSpec:
    """Per modulus, A's residue tiles by B's on INT8 wgmma (m64n256k32, both
    operands by descriptor), reduced modulo p_i on the way out
    (kernels/cuda/int8_products.cu): 128 x 256 blocks of a producer and two
    consumer warpgroups, STAGES k-tiles of 48 KB in flight."""
    bm, bn = RESIDUE_TILE_M, RESIDUE_TILE_N
    return KernelSpec(
        "int8_products", "cuda", "int8_products.cu", (384, 1, 1), bm, bn,
        (("BM", bm), ("BN", bn), ("STAGES", STAGES), ("GROUP_M", GROUP_M)),
        shared_memory=STAGES * (bm + bn) * 128 + 1024,
        min_blocks=1,
        inputs=("ra", "rb", "choice", "params"), outputs=("residues",),
        input_dtypes=("int8", "int8", "int32", "int32"), output_dtypes=("int8",),
    )


def cuda_int8_choice() -> KernelSpec:
    """The moduli and bits from every line's statistics, or why not: one block
    of 1024 threads, 64 registers each (kernels/cuda/int8_choice.cu)."""
    return KernelSpec(
        "int8_choice", "cuda", "int8_choice.cu", (1024, 1, 1), 1, 1,
        min_blocks=1,
        inputs=("a_stats", "b_stats", "params"), outputs=("choice",),
        input_dtypes=("float32", "float32", "int32"), output_dtypes=("int32",),
    )


def cuda_int8_fallback() -> KernelSpec:
    """tile_threads as the emulation's float32 fallback: only the tiles the
    choice does not emulate (no moduli, or an Inf or NaN in their lines), by
    a block an SM or so walking the tiles of one 2-D product (persistent), each
    stopping at once where no line is marked."""
    threads = next(s for s in _SPECS["cuda"] if s.stage == "tile_threads")
    return dataclasses.replace(
        threads, stage="int8_fallback", persistent=True,
        defines=(("SGEMM_EMULATION_FALLBACK", 1),),
        inputs=(*INPUT_NAMES, "choice", "a_stats", "b_stats"),
        input_dtypes=("float32", "float32", "int32", "int32", "float32", "float32"),
    )


def cuda_int8_reconstruct() -> KernelSpec:
    """C from the residue products by the CRT, unscaled; the outputs the
    scheme does not give from the fallback (kernels/cuda/int8_reconstruct.cu).
    Four blocks an SM (64 registers a thread): one block's loads overlap
    another's float64 work."""
    return KernelSpec(
        "int8_reconstruct", "cuda", "int8_reconstruct.cu", (256, 1, 1), 1, 8,
        min_blocks=4,
        inputs=("residues", "a_stats", "b_stats", "constants", "choice", "direct", "params"),
        outputs=("c_out",),
        input_dtypes=("int8", "float32", "float32", "int32", "int32", "float32", "int32"),
        output_dtypes=("float32",),
    )


# The float16 split (mlx_sgemm/emulation/half_split.py): each line scaled by a
# power of two into float16's range and split into big and small float16
# parts, in the INT8 residues' tiles; their wgmma products.
# A line's largest magnitude is scaled into [2^(HALF_SPLIT_TOP - 1),
# 2^HALF_SPLIT_TOP): the largest power of two below float16's largest finite
# value (65504), so that the line's entries keep float16's normal range below it.
HALF_SPLIT_TOP = 15
# The widest exponent span of a line the split takes (mlx_sgemm/emulation/
# half_split.py, MAX_SPAN, says why 38); the split marks the others for the
# float32 fallback (sgemm::split_stats).
HALF_SPLIT_MAX_SPAN = 38
# The float16 parts a line keeps at each precision: big and small (float32
# accuracy, three products), or big alone (TF32's 11 bits, one product).
HALF_SPLIT_PARTS = {"float32": 2, "tf32": 1}


# The longest contiguous line half_split.cu reads whole (its statistics and
# parts from one read): 256 threads of 4 chunks of 8 k, 32 floats a thread.
HALF_SPLIT_WHOLE_K = 8192


def cuda_half_split(PARTS: int = 2) -> KernelSpec:
    """A's rows and B^T's, in one launch, scaled and rounded to float16 parts
    (2: big and small, float32 accuracy; 1: big, TF32 accuracy), in the
    products' swizzled tiles, and their statistics, a line past MAX_SPAN
    marked for the fallback (kernels/cuda/half_split.cu)."""
    return KernelSpec(
        "half_split", "cuda", "half_split.cu", (256, 1, 1), 1, 8,
        (("TOP", HALF_SPLIT_TOP), ("PARTS", PARTS), ("WHOLE_K", HALF_SPLIT_WHOLE_K),
         ("MAX_SPAN", HALF_SPLIT_MAX_SPAN)),
        inputs=("a", "bt", "a_stats", "b_stats", "params"),
        outputs=("a_parts", "b_parts", "a_stats_out", "b_stats_out"),
        input_dtypes=("float32", "float32", "float32", "float32", "int32"),
        output_dtypes=("float16", "float16", "float32", "float32"),
    )


def cuda_half_products(PARTS: int = 2, BN: int = 192, STAGES: int = 2, GROUP_M: int = 8) -> KernelSpec:
    """C from the float16 parts on wgmma (m64nBNk16, both operands by
    descriptor), unscaled, the fallback's outputs merged
    (kernels/cuda/half_products.cu): 128 x BN blocks of a producer and two
    consumer warpgroups, each with a fresh and a running accumulator of BN / 2
    floats a thread (BN = 192: 192 of its 232 registers); STAGES k-tiles of
    the four parts in flight (80 KB each at BN = 192). PARTS = 1 (TF32
    accuracy): one product, one accumulator, 128 + BN 128-byte rows a stage."""
    return KernelSpec(
        "half_products", "cuda", "half_products.cu", (384, 1, 1), 128, BN,
        (("BM", 128), ("BN", BN), ("STAGES", STAGES), ("GROUP_M", GROUP_M), ("TOP", HALF_SPLIT_TOP),
         ("PARTS", PARTS)),
        shared_memory=STAGES * PARTS * (128 + BN) * 128 + 1024,
        min_blocks=1,
        inputs=("ah", "bh", "a_stats", "b_stats", "direct", "params"), outputs=("c",),
        input_dtypes=("float16", "float16", "float32", "float32", "float32", "int32"),
        output_dtypes=("float32",),
    )


def cuda_half_products_for(precision: str, narrow: bool = False) -> KernelSpec:
    """half_products.cu as the float16 split runs it at ``precision``: for
    float32 two parts, 128 x 192 blocks with 2 stages, or ``narrow`` 128 x 128
    with 3 (kernel_choice.half_split_spec says which: H200, 128 x 128 with 2
    stages 4-8% slower than with 3); for TF32 one part, 128 x 256, 4 stages
    (H100, 4096^3 and 8192^3: 128 x 192 with 4-5 stages 4-9% slower, 3 stages
    1-7%, tile orders of 4 and 16 rows 2-12%)."""
    parts = HALF_SPLIT_PARTS[precision]
    if parts == 1:
        return cuda_half_products(PARTS=parts, BN=256, STAGES=4)
    return cuda_half_products(PARTS=parts, BN=128, STAGES=3) if narrow else cuda_half_products(PARTS=parts)


_SPECS = {
    "cuda": [
        # One thread per output; 32 threads along N so a warp's loads of B and
        # stores of C are coalesced.
        KernelSpec("naive", "cuda", "naive.cu", (32, 8, 1), 8, 32, converts_on_load=True),
        KernelSpec("tile_16", "cuda", "tile.cu", (16, 16, 1), 16, 16, (("TILE", 16),),
                   converts_on_load=True),
        KernelSpec("tile_32", "cuda", "tile.cu", (32, 32, 1), 32, 32, (("TILE", 32),),
                   converts_on_load=True),
        # 256 threads x 8x16 outputs each = a 128x256 tile, warp-tiled, k-tiles
        # of 8 double-buffered in shared memory, each thread's fragments read a
        # k ahead (see tile_threads.cu); one block an SM: each k-tile copied
        # serves 128x256 outputs. H200, 4096^3 / 8192^3: 40.4 / 43.8 TFLOP/s,
        # against 37.6 / 40.9 for two 128x128 blocks an SM (docs/performance-log.md,
        # "tile_threads: one 128x256 block per SM"; k-tiles of 8 and 8x16 outputs
        # a thread: "tile_threads: 8x16 outputs a thread").
        KernelSpec(
            "tile_threads", "cuda", "tile_threads.cu", (256, 1, 1), 128, 256,
            (("BM", 128), ("BN", 256), ("BK", 8), ("TM", 8), ("TN", 16)),
            min_blocks=1, converts_on_load=True,
        ),
        cuda_warp_tiled(),
        cuda_pipelined(),
        cuda_wgmma(),
        # M <= 8 (decode-time x @ W): memory-bound (kernels/cuda/small_m.cu).
        # BN 32, 8 warps, 4 stages (80 KB, 2 blocks/SM, 128 registers). H200,
        # compiled calls in alternating rounds (benchmarks/small_m_variants.py): 3
        # stages the same within noise, BN 64 with 16 warps faster on one
        # shape and slower on others, BN 16 with 4 warps up to 40% slower.
        cuda_small_m(),
        # M <= 4 against N >= 12288 (kernel_choice.WIDE_N): 128 columns a block, B
        # read straight into registers (kernels/cuda/small_m_wide.cu). 8 warps;
        # 4 chunks in flight (row-major B) were 0-10% faster than 2, 16 warps
        # slower (docs/performance-log.md, "small_m_wide: B straight into registers").
        cuda_small_m_wide(),
    ],
    # Every Metal kernel reads a_strides / b_strides, so MLX passes any layout
    # as it is (transposed views, slices, broadcasts): no copies. All but
    # tile_async and gemm read operands through sgemm::Operand<P> alone, which
    # converts each element to float32 as it reads it. The simdgroup-matrix
    # kernels (half_tiles) keep operands of one half type in half tiles.
    "metal": [
        KernelSpec("naive", "metal", "naive.metal", (16, 16, 1), 16, 16, converts_on_load=True),
        KernelSpec("tile_16", "metal", "tile.metal", (16, 16, 1), 16, 16, (("TILE", 16),),
                   converts_on_load=True),
        KernelSpec("tile_32", "metal", "tile.metal", (32, 32, 1), 32, 32, (("TILE", 32),),
                   converts_on_load=True),
        # The M2 SGEMM journey's choice: 8x8 threads, 4x4 outputs each, a 32x32 tile, TILE_K 16.
        KernelSpec(
            "tile_threads", "metal", "tile_threads.metal", (8, 8, 1), 32, 32,
            (("TILE_K", 16), ("WPT", 4)), converts_on_load=True,
        ),
        # 4 simdgroups, each a 16x16 block of 2x2 simdgroup_float8x8 accumulators.
        KernelSpec(
            "tile_simdgroup", "metal", "tile_simdgroup.metal", (128, 1, 1), 32, 32,
            (("BM", 32), ("BN", 32), ("SG_M", 16), ("SG_N", 16), ("TILE_K", 16)),
            converts_on_load=True, half_tiles=True,
        ),
        # matmul's small-M variant (M <= 8), Akunu's GEMM chapter's "small" GEMM: the same
        # kernel with an 8x128 block, 4 simdgroups of 8x32 side by side.
        KernelSpec(
            "small_m", "metal", "tile_simdgroup.metal", (128, 1, 1), 8, 128,
            (("BM", 8), ("BN", 128), ("SG_M", 8), ("SG_N", 32), ("TILE_K", 16)),
            converts_on_load=True, half_tiles=True,
        ),
        # Fast Matrix Multiply on an Apple GPU's best: SW x SW = 2x2 simdgroups of SIMD_TILE x SIMD_TILE = 4x4
        # accumulators (a 64x64 block), k-tiles of 16 fetched by simdgroup_async_copy,
        # double buffered. The async copy moves bytes into tiles the simdgroup
        # matrices read: float32 ones, or for operands of one half type half
        # ones (half_tiles); a mixed pair is cast to float32 first. The same
        # source, with SGEMM_ALPHA_BETA, is gemm:
        # C = alpha A B + beta C_in (inputs c_in, the output's shape, row-contiguous,
        # and scalars = [alpha, beta]).
        KernelSpec(
            "tile_async", "metal", "tile_async.metal", (128, 1, 1), 64, 64,
            (("SW", 2), ("SIMD_TILE", 4), ("TILE_K", 16)), half_tiles=True,
        ),
        KernelSpec(
            "gemm", "metal", "tile_async.metal", (128, 1, 1), 64, 64,
            (("SW", 2), ("SIMD_TILE", 4), ("TILE_K", 16)),
            defines=(("SGEMM_ALPHA_BETA", 1),),
            inputs=("a", "b", "c_in", "params", "scalars"), half_tiles=True,
        ),
    ],
}

# The journey, in order; every backend implements each stage.
STAGES = ("naive", "tile_16", "tile_32", "tile_threads", "tile_simdgroup", "tile_async")


# The INT8 emulation's kernels (mlx_sgemm.emulation): not stages of matmul,
# and not of the a/b/params interface.
_EMULATION_SPECS = {
    "cuda": [cuda_int8_residue_gemm(), cuda_int8_line_stats(), cuda_int8_choice(), cuda_int8_residues(),
             cuda_int8_products(), cuda_int8_fallback(), cuda_int8_reconstruct(), cuda_half_split(),
             cuda_half_products(), cuda_half_products_for("float32", narrow=True),
             cuda_half_split(HALF_SPLIT_PARTS["tf32"]), cuda_half_products_for("tf32")],
    "metal": [],
}


def specs(backend: str) -> list[KernelSpec]:
    """Every matmul kernel of one backend."""
    return list(_SPECS[backend])


def emulation_specs(backend: str) -> list[KernelSpec]:
    """The emulations' kernels of one backend (INT8, and the float16 split)."""
    return list(_EMULATION_SPECS[backend])


def spec(stage: str, backend: str) -> KernelSpec:
    for s in _SPECS[backend]:
        if s.stage == stage:
            return s
    raise ValueError(f"no {backend} kernel for stage {stage!r}")


def element_type_instances(backend: str) -> list[KernelSpec]:
    """Every instance of ``backend``'s kernels that reads a pair of element
    types other than float32's as they are (converted on load, or in half
    tiles; specs() has float32's): a kernel per (stage, a's type, b's type)."""
    return [spec.reading(a, b) for spec in _SPECS[backend]
            for a in ELEMENT_TYPES for b in ELEMENT_TYPES
            if (a, b) != FLOAT32_OPERANDS and (spec.converts_on_load or spec.reads_half_tiles(a, b))]


def half_wgmma_specs() -> list[KernelSpec]:
    """Every half_wgmma instance matmul may run (kernel_choice.half_launch): its
    block shapes, for both half types, rounding to the type or writing float32,
    and the pass that sums its K splits."""
    return [cuda_half_wgmma(element, output, BM=bm, BN=bn)
            for element in ("float16", "bfloat16") for output in (element, "float32")
            for bm, bn in HALF_WGMMA_BLOCKS] + [cuda_split_sum(t) for t in ("float16", "bfloat16")]


# half_wgmma's block shapes, largest first (kernel_choice.half_launch picks
# one). 192 columns with 128 rows only: with 64 a consumer would take 96
# columns, a product (m64n96) the kernel does not issue.
HALF_WGMMA_BLOCKS = ((128, 256), (128, 192), (128, 128), (64, 256), (64, 128))


def half_mma_specs() -> list[KernelSpec]:
    """Every half_mma instance matmul may run on a GPU without wgmma
    (kernel_choice.half_launch): its block shapes, for both half types,
    rounding to the type or writing float32 (its K splits are summed by
    split_sum, listed with half_wgmma_specs)."""
    return [cuda_half_mma(element, output, BM=bm, BN=bn)
            for element in ("float16", "bfloat16") for output in (element, "float32")
            for bm, bn in HALF_MMA_BLOCKS]


# half_mma's block shapes, largest first: 128 x 128, and 64 rows for C of no
# more (kernel_choice.half_launch picks one).
HALF_MMA_BLOCKS = ((128, 128), (64, 128))
