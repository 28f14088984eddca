#include "sgemm/async_copy.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/mma_sync.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/smem_tile.cuh"
// Stage 5, tile_async: hide memory latency behind the matrix units.
//
// In tile_simdgroup every k-step waits for its tiles to arrive from device
// memory, then computes, then waits again. Here cp.async copies run STAGES - 1
// k-tiles ahead into a ring of shared-memory buffers, straight from device
// memory to shared memory (no registers in between), so the loads of later
// k-tiles are in flight while the warps compute on the current one; one barrier
// per k-tile. Blocks walk the output in bands of GROUP_M tile rows (see
// sgemm::locate_tile) so what they read is still in L2 for their neighbours.
//
// A copy cannot transpose, so each operand's tiles keep its own orientation in
// shared memory (sgemm::SmemTile) and the main loop is compiled per layout pair.
// SPLIT: 3xTF32 (float32 accuracy) or single-pass TF32 (cuBLAS's TF32 mode).
// float32 operands only: a copy moves bytes, and the tensor cores read these
// tiles as float32, so half operands are cast to float32 (in MLX) first.
// The warp tiling is tile_simdgroup's (sgemm::warp_tile_mma_presplit); Inf
// and NaN as there (the split's probe, outputs recomputed with FMAs).
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
static_assert(THREADS == 256, "the spec launches 256 threads");

// STAGES buffers of (A tile, B tile), each sized for either orientation, and
// with SPLIT one more pair of stages for the k-tile being multiplied, split
// into its big and small TF32 parts (the same layouts): the copies move bytes,
// so the split comes after them, once per element for every warp that reads it
// (tile_simdgroup's warp_tile_mma_presplit). The spec asks MLX for
// (STAGES + 2 SPLIT) * STAGE_FLOATS floats (mlx_sgemm/specs.py).
extern __shared__ float4 smem_float4[];
float* const smem = reinterpret_cast<float*>(smem_float4);
constexpr int A_FLOATS = sgemm::SmemTile<sgemm::ROW_MAJOR, BM, BK>::MAX_FLOATS;
constexpr int B_FLOATS = sgemm::SmemTile<sgemm::ROW_MAJOR, BK, BN>::MAX_FLOATS;
constexpr int STAGE_FLOATS = A_FLOATS + B_FLOATS;
float* const split_big = smem + STAGES * STAGE_FLOATS;
float* const split_small = split_big + STAGE_FLOATS;
__shared__ int saw_non_finite;
if (threadIdx.x == 0) saw_non_finite = 0;

const sgemm::Tile<> t = sgemm::locate_tile<GROUP_M>(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int warp = threadIdx.x / 32;
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
const int k_tiles = (t.K + BK - 1) / BK;

sgemm::with_layouts(t.A, t.B, [&](auto a_layout, auto b_layout) SGEMM_MAIN_LOOP {
  constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
  using ATile = sgemm::SmemTile<AL, BM, BK>;
  using BTile = sgemm::SmemTile<BL, BK, BN>;

  auto start_loading = [&](int kt) {
    float* As = smem + (kt % STAGES) * STAGE_FLOATS;
    sgemm::cp_async_tile<BM, BK, THREADS, AL>(As, t.A, t.row0, kt * BK);
    sgemm::cp_async_tile<BK, BN, THREADS, BL>(As + A_FLOATS, t.B, kt * BK, t.col0);
  };

  if constexpr (SPLIT) {
    // The tiles' padding is never copied into, but the split reads it with the
    // rest: zeros, not whatever shared memory held (a NaN there would send the
    // block to the exact path for nothing).
    for (int i = threadIdx.x; i < STAGES * STAGE_FLOATS; i += THREADS) smem[i] = 0.0f;
    __syncthreads();
  }
  // Prologue: the first STAGES - 1 k-tiles in flight. Every iteration commits
  // one group (empty past the end) so that "wait until STAGES - 2 groups are
  // pending" always means "the oldest k-tile has landed".
  for (int kt = 0; kt < STAGES - 1; ++kt) {
    if (kt < k_tiles) start_loading(kt);
    sgemm::cp_async_commit();
  }

  float acc[WM / 16][WN / 8][4] = {};
  float probe = 0.0f;  // NaN once this thread has split an Inf or NaN
  for (int kt = 0; kt < k_tiles; ++kt) {
    sgemm::cp_async_wait<STAGES - 2>();
    // k-tile kt is visible to all threads, and all have finished k-tile kt - 1,
    // whose buffer the next copy reuses (and, with SPLIT, its split parts).
    __syncthreads();
    if (kt + STAGES - 1 < k_tiles) start_loading(kt + STAGES - 1);
    sgemm::cp_async_commit();
    const float* As = smem + (kt % STAGES) * STAGE_FLOATS;
    if constexpr (SPLIT) {
#pragma unroll 4
      for (int i = 4 * threadIdx.x; i < STAGE_FLOATS; i += 4 * THREADS) {
        const float4 x = *reinterpret_cast<const float4*>(As + i);
        float4 big, small;
        sgemm::split_tf32_fast4(x, big, small, probe);
        *reinterpret_cast<float4*>(split_big + i) = big;
        *reinterpret_cast<float4*>(split_small + i) = small;
      }
      __syncthreads();
      sgemm::warp_tile_mma_presplit<WM / 16, WN / 8, BK, ATile, BTile>(
          acc, split_big, split_small, split_big + A_FLOATS, split_small + A_FLOATS, wm0, wn0);
    } else {
      sgemm::warp_tile_mma_tf32<WM / 16, WN / 8, BK, ATile, BTile>(acc, As, As + A_FLOATS, wm0, wn0);
    }
  }
  if (!(probe == 0.0f)) saw_non_finite = 1;
  __syncthreads();
  sgemm::store_warp_tile(t, acc, wm0, wn0, saw_non_finite != 0);
});
