#include "sgemm/dispatch.cuh"
#include "sgemm/epilogue.cuh"
#include "sgemm/int8_tiles.cuh"
#include "sgemm/load.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/schedule.cuh"
// Stage 3, tile_threads: register tiling. Each thread computes TM x TN = 8x16
// outputs of a BM x BN = 128x256 block with 256 threads.
//
// Why this shape on NVIDIA: a TM x TN register tile does TM * TN FMAs for every
// TM + TN values it reads from shared memory (vs. 2 reads per FMA in the tiled
// stage). A Hopper SM's FMA units do 128 FMAs a cycle, but its shared memory
// delivers 32 floats (128 bytes) a cycle to the lanes, broadcast or not: 8x8
// (4 FMAs per value read) would keep shared memory as busy as the FMA units,
// 8x16 (5.3) leaves it a quarter idle (measured on an H200: 8x16 is 5% faster
// than 8x8 with everything else equal). 128 accumulators plus operands fit in
// the 255 registers a thread can have, so an SM holds 8 warps: one block of
// 128x256 (the spec's bound), rather than two of 128x128, because the wider
// block copies fewer k-tile values per FMA (384 per 128 x 256 outputs against
// 256 per 128 x 128): 7% faster on an H200 and an H100 at 4096^3 and 8192^3
// (docs/performance-log.md, "tile_threads: one 128x256 block per SM"). The M2
// SGEMM journey's 4x4-per-thread, 8x8-thread layout suits the smaller Apple
// register file; see kernels/metal/tile_threads.metal.
//
// Operands of float16 or bfloat16 (TA, TB) stay so in registers between their
// loads and their stores to shared memory, where they become float32
// (sgemm::KTileStager): the k-tiles and the FMAs are float32.
static_assert(TM % 4 == 0 && TN % 4 == 0, "a thread's rows and columns come in runs of 4");
constexpr int THREADS = (BM / TM) * (BN / TN);

// Warp tiling: a warp's 32 lanes form a 4 x 8 grid, so a warp computes a
// WM x WN = 4 TM x 8 TN tile, and the warps tile the block. A thread's TM rows
// are runs of 4, RUN_M = 16 apart, its TN columns runs of 4, RUN_N = 32 apart:
// every shared-memory read is one 16-byte load, a warp's load touches 4 float4s
// of A (64 bytes, each broadcast to 8 lanes) or 8 of B (128 bytes): no bank
// conflicts, and each store of C covers 128 contiguous bytes per row.
constexpr int LANES_M = 4, LANES_N = 8;
constexpr int WM = LANES_M * TM, WN = LANES_N * TN, WARPS_N = BN / WN;
constexpr int RUN_M = 4 * LANES_M, RUN_N = 4 * LANES_N;
static_assert(BM % WM == 0 && BN % WN == 0 && (BM / WM) * WARPS_N * 32 == THREADS,
              "the warps tile the block");

// Both tiles are k-major: As[k][m] (A transposed) and Bs[k][n], so a thread's 4
// consecutive rows or columns are one float4. Two of each (double buffering):
// the threads compute on one while the next k-tile is written to the other, so
// one barrier per k-tile suffices. Row stride +4 floats (= 4 mod 8): the
// transposing stores of a row-major A (or of B a transposed view) hit distinct
// banks (sgemm::KTileStager).
constexpr int LDA = BM + 4, LDB = BN + 4;
__shared__ __align__(16) float As[2][BK][LDA];
__shared__ __align__(16) float Bs[2][BK][LDB];

// The block's tile of C, t: its k-tiles, then its outputs.
auto compute = [&](const sgemm::Tile<TA, TB>& t) {
  // As is the K x M view of A: its layout decides how A's tile is read (16 bytes
  // down the K x M view's columns for a row-major A, along its rows for A.T).
  sgemm::with_layouts(t.A.transposed(), t.B, [&](auto a_layout, auto b_layout) SGEMM_MAIN_LOOP {
    constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // First row and column of the thread's first runs, in the block.
    const int m0 = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;
    const int n0 = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;
    const sgemm::Operand<TB>& B = t.B;

    // Blocks whose tiles lie inside A and B (all but the edge blocks) load
    // every whole k-tile by a plan made once (KTileStager::Plan).
    using AStager = sgemm::KTileStager<BK, BM, THREADS, AL, TA>;
    using BStager = sgemm::KTileStager<BK, BN, THREADS, BL, TB>;
    const int K = t.K;
    const bool a_inside = t.A.transposed().template vectorizes<AL>() && t.row0 + BM <= t.M;
    const bool b_inside = B.template vectorizes<BL>() && t.col0 + BN <= t.N;
    const typename AStager::Plan a_plan = AStager::plan(t.A.transposed(), t.row0);
    const typename BStager::Plan b_plan = BStager::plan(B, t.col0);
    AStager a_next;
    BStager b_next;
    auto fetch_a = [&](int k0) {
      if (a_inside && k0 + BK <= K) a_next.fetch(a_plan, k0);
      else a_next.fetch(t.A.transposed(), k0, t.row0);
    };
    auto fetch_b = [&](int k0) {
      if (b_inside && k0 + BK <= K) b_next.fetch(b_plan, k0);
      else b_next.fetch(B, k0, t.col0);
    };

    // Prologue: k-tile 0 into buffer 0.
    fetch_a(0);
    fetch_b(0);
    a_next.template store<LDA>(&As[0][0][0]);
    b_next.template store<LDB>(&Bs[0][0][0]);
    __syncthreads();

    // A thread's fragments at one k: its TM values of A and TN of B, read from
    // shared memory as float4s. They are read one k ahead of the FMAs that use
    // them, into the other of two register sets: each read then has a whole
    // k's TM x TN FMAs to arrive. With two warps a scheduler nothing else hides
    // that latency (ncu: the FMAs stalled on the reads), and left to itself the
    // compiler, at the 255-register cap, issued each read a few FMAs ahead.
    // H200, 4096^3: 36.1-36.9 -> 38.4-38.9 TFLOP/s (docs/performance-log.md,
    // "tile_threads: fragments read a k ahead").
    int buf = 0;  // the shared-memory buffer the threads compute on
    float av[2][TM], bv[2][TN];
    auto read_fragments = [&](int set, int k) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        *reinterpret_cast<float4*>(&av[set][i]) =
            *reinterpret_cast<const float4*>(&As[buf][k][m0 + (i / 4) * RUN_M]);
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        *reinterpret_cast<float4*>(&bv[set][j]) =
            *reinterpret_cast<const float4*>(&Bs[buf][k][n0 + (j / 4) * RUN_N]);
      }
    };

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
      // The next k-tile goes through registers into the other buffer while this
      // one is computed on: A's loads are issued now and stored halfway, B's
      // issued halfway and stored at the end. Each has half a k-tile of FMAs to
      // arrive, and registers hold only one operand's share of the tile at a
      // time (holding both through the whole k-tile measured 3-4% slower).
      const bool more = k0 + BK < K;
      if (more) fetch_a(k0 + BK);

#pragma unroll
      for (int k = 0; k < BK; ++k) {
        if (k == BK / 2 && more) {
          a_next.template store<LDA>(&As[buf ^ 1][0][0]);
          fetch_b(k0 + BK);
        }
        if (k == 0) read_fragments(0, 0);
        if (k + 1 < BK) read_fragments((k + 1) % 2, k + 1);
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
          for (int j = 0; j < TN; ++j) {
            acc[i][j] += av[k % 2][i] * bv[k % 2][j];
          }
        }
      }

      // The other buffer was last read before the barrier that ended the
      // previous step, so it can be overwritten; this barrier publishes it.
      if (more) b_next.template store<LDB>(&Bs[buf ^ 1][0][0]);
      __syncthreads();
      buf ^= 1;
    }

    const bool c_aligned = t.ldc % 4 == 0 && sgemm::is_16_byte_aligned(t.C);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = t.row0 + m0 + (i / 4) * RUN_M + i % 4;
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const int col = t.col0 + n0 + (j / 4) * RUN_N;
        sgemm::store4_clipped(t.C, t.ldc, row, col, t.M, t.N, c_aligned,
                              make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
      }
    }
  });
};

#ifdef SGEMM_EMULATION_FALLBACK
// Built as the emulations' float32 fallback (mlx_sgemm/emulation/gpu.py: one
// 2-D product, K whole): a block an SM or so (the spec is persistent), each
// walking the tiles blockIdx.x, + gridDim.x, .. and computing only those whose
// outputs the scheme does not give. Each block first reads every line's
// largest magnitude once and stops where none is marked, which is the common
// case. (A block a tile, each reading its 384 lines', left the whole fallback
// waiting on one block an SM at a time, 243 registers a thread: 25 us of
// empty blocks at 8192^3 on an H200, docs/performance-log.md, "The
// fallback's blocks walk the tiles".)
{
  const int M = params[sgemm::P_M], N = params[sgemm::P_N];
  if (!sgemm::fallback_computes_tile(choice, a_stats, M, b_stats, N, 0, 0, M, N)) return;
  const int tiles = params[sgemm::P_TILES_M] * params[sgemm::P_TILES_N];
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const sgemm::Tile<TA, TB> t =
        sgemm::locate_block(tile, BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
    if (sgemm::fallback_computes_tile(choice, a_stats, M, b_stats, N, t.row0, t.col0, BM, BN)) compute(t);
  }
}
#else
compute(sgemm::locate_tile(BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c));
#endif
