#include "sgemm/async_copy.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/mma_sync.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/smem_tile.cuh"
#include "sgemm/split_ring.cuh"
#include "sgemm/split_tile.cuh"
// Stage 5, tile_async: hide memory latency behind the matrix units.
//
// In tile_simdgroup each k-tile goes from device memory through the loading
// threads' registers, so a thread has one k-tile in flight and waits for it
// before it can split and store it. Here cp.async copies run STAGES - 1
// k-tiles ahead into a ring of shared-memory buffers, straight from device
// memory to shared memory (no registers in between), so the loads of later
// k-tiles are in flight while the current one is split and multiplied. Blocks
// walk the output in bands of GROUP_M tile rows (see sgemm::locate_tile) so
// what they read is still in L2 for their neighbours.
//
// A copy cannot transpose, so each operand's tiles keep its own orientation in
// shared memory (sgemm::SmemTile), the copies compiled per layout pair.
// SPLIT: 3xTF32 (float32 accuracy) or single-pass TF32 (cuBLAS's TF32 mode).
// float32 operands only: a copy moves bytes, and the tensor cores read these
// tiles as float32, so half operands are cast to float32 (in MLX) first.
//
// With SPLIT the warps multiply tile_simdgroup's split k-tiles in fragment
// order (sgemm::SplitTile, sgemm::warp_tile_mma_split), which a copy cannot
// make either: each landed k-tile is split once (sgemm::SplitTileStager, from
// shared memory). Inf and NaN as in tile_simdgroup (the split's probe, outputs
// recomputed with FMAs).
// - On Hopper (LOADERS = 4), tile_simdgroup's block: a loading warpgroup
//   issues the copies, waits for each k-tile to land (its own barrier, for the
//   4 warps' copies), splits it into the ring of SPLIT_STAGES split k-tiles the
//   8 multiplying warps read (sgemm::SplitRing). Its k-tiles are in flight
//   without it holding them, so it keeps ahead of the multipliers, which
//   tile_simdgroup's loaders do not: H200, 4096^3 / 8192^3, 50.1 / 53.4
//   TFLOP/s against tile_simdgroup's 47.7 / 48.9 (the recorded sweep,
//   benchmarks/results/bench-2026-11-26-h200.csv; docs/performance-log.md,
//   "tile_simdgroup and tile_async: a loading warpgroup").
// - Elsewhere, and for TF32 (LOADERS = 0), the 8 warps copy, split and
//   multiply: each landed k-tile is split into one of two split buffers a
//   k-tile ahead of the products, in the same iteration as they run on the
//   other buffer, so one barrier a k-tile hands over both rings.
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32 + 32 * LOADERS;
static_assert(LOADERS == 0 || (LOADERS == 4 && SPLIT), "none or a warpgroup loading (3xTF32)");

// STAGES buffers of (A tile, B tile), each sized for either orientation, and
// with SPLIT two buffers of (A tile, B^T tile) split, in fragment order. The
// spec asks MLX for STAGES * STAGE_FLOATS + 2 SPLIT * SPLIT_FLOATS floats
// (mlx_sgemm/build/specs.py).
extern __shared__ float4 smem_float4[];
constexpr int A_FLOATS = sgemm::SmemTile<sgemm::ROW_MAJOR, BM, BK>::MAX_FLOATS;
constexpr int B_FLOATS = sgemm::SmemTile<sgemm::ROW_MAJOR, BK, BN>::MAX_FLOATS;
constexpr int STAGE_FLOATS = A_FLOATS + B_FLOATS;
constexpr int A_SPLIT_FLOATS = sgemm::SplitTile<BM, BK>::FLOATS;
constexpr int SPLIT_FLOATS = A_SPLIT_FLOATS + sgemm::SplitTile<BN, BK>::FLOATS;
__shared__ int saw_non_finite;
if (threadIdx.x == 0) saw_non_finite = 0;

const sgemm::Tile<> t = sgemm::locate_tile<GROUP_M>(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
if constexpr (LOADERS > 0) {
  // The loaders' registers: copy plans, and a k-tile's runs of A, then of B,
  // on their way from the landed k-tile into the ring.
  using Ring = sgemm::SplitRing<BM, BN, BK, SPLIT_STAGES, 136>;
  static_assert(LOADERS == 0 || THREADS == Ring::THREADS, "the ring's block");
  constexpr int LOAD_THREADS = Ring::LOAD_THREADS;
  float* const raw = reinterpret_cast<float*>(smem_float4);
  const Ring ring{raw + STAGES * STAGE_FLOATS};
  const int k_tiles = (t.K + BK - 1) / BK;
  ring.run(t, k_tiles, &saw_non_finite, [&](float& probe) {
    sgemm::with_layouts(t.A, t.B, [&](auto a_layout, auto b_layout) {
      constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
      const sgemm::KTileCopies<BM, BN, BK, LOAD_THREADS, AL, BL, A_FLOATS, STAGES, STAGE_FLOATS> copies(
          raw, t.A, t.B, t.row0, t.col0);
      copies.start_first();
      for (int kt = 0; kt < k_tiles; ++kt) {
        // k-tile kt has landed, every loader's copies of it (and every loader
        // is done splitting kt - 1, whose stage the next copies reuse).
        copies.wait_oldest();
        sgemm::barrier_sync(Ring::LOADERS_BARRIER, LOAD_THREADS);
        copies.start_next(kt);
        sgemm::split_landed_k_tile<AL, BL, BM, BN, BK, LOAD_THREADS, A_FLOATS>(
            copies.stage(kt), ring.slot(kt), probe);
        ring.loaded(kt);
      }
    });
  });
} else {
const int warp = threadIdx.x / 32;
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
const int k_tiles = (t.K + BK - 1) / BK;

sgemm::with_layouts(t.A, t.B, [&](auto a_layout, auto b_layout) SGEMM_MAIN_LOOP {
  constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
  using ATile = sgemm::SmemTile<AL, BM, BK>;
  using BTile = sgemm::SmemTile<BL, BK, BN>;
  // Named here, not captured: through a captured pointer the compiler no
  // longer knows the buffers are shared memory, and every access is a
  // generic load or store (LD, ST), slower than LDS and STS.
  float* const smem = reinterpret_cast<float*>(smem_float4);
  float* const split = smem + STAGES * STAGE_FLOATS;

  // The operands as values of this function (read through the captured tile,
  // each copy would load them again from memory).
  const sgemm::KTileCopies<BM, BN, BK, THREADS, AL, BL, A_FLOATS, STAGES, STAGE_FLOATS> copies(
      smem, t.A, t.B, t.row0, t.col0);
  copies.start_first();

  float acc[WM / 16][WN / 8][4] = {};
  float probe = 0.0f;  // NaN once this thread has split an Inf or NaN
  // The k-tile's 8-k steps as a loop, not unrolled: unrolled, the compiler
  // loads every step's fragments up front and, at BK = 32, spills.
  auto multiply_split = [&](int kt) {
    const float* tiles = split + (kt % 2) * SPLIT_FLOATS;
    sgemm::warp_tile_mma_split<WM / 16, WN / 8, BK, BM, BN, 1>(acc, tiles, tiles + A_SPLIT_FLOATS,
                                                               wm0, wn0);
  };
  for (int kt = 0; kt < k_tiles; ++kt) {
    copies.wait_oldest();
    // k-tile kt is visible to all threads, and all have finished k-tile kt - 1,
    // whose buffer the next copy reuses (with SPLIT: split k-tile kt - 1, and
    // multiplied k-tile kt - 2, whose split buffer k-tile kt's split reuses).
    __syncthreads();
    copies.start_next(kt);
    const float* As = copies.stage(kt);
    if constexpr (SPLIT) {
      if (kt > 0) multiply_split(kt - 1);
      sgemm::split_landed_k_tile<AL, BL, BM, BN, BK, THREADS, A_FLOATS>(
          As, split + (kt % 2) * SPLIT_FLOATS, probe);
    } else {
      sgemm::warp_tile_mma_tf32<WM / 16, WN / 8, BK, ATile, BTile>(acc, As, As + A_FLOATS, wm0, wn0);
    }
  }
  if constexpr (SPLIT) {
    // The last k-tile's products, once its split is visible.
    __syncthreads();
    if (k_tiles > 0) multiply_split(k_tiles - 1);
  }
  if (!(probe == 0.0f)) saw_non_finite = 1;
  __syncthreads();
  sgemm::store_warp_tile(t, acc, wm0, wn0, saw_non_finite != 0);
});
}
