#include "sgemm/async_copy.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/mma_sync.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/smem_tile.cuh"
#include "sgemm/split_tile.cuh"
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
//
// With SPLIT the warps multiply tile_simdgroup's split k-tiles in fragment
// order (sgemm::SplitTile, sgemm::warp_tile_mma_split), which a copy cannot
// make either: each landed k-tile is split once into one of two split buffers
// (sgemm::SplitTileStager, from shared memory) a k-tile ahead of the products,
// in the same iteration as they run on the other buffer, so the one barrier a
// k-tile also hands the split buffers over. Inf and NaN as in tile_simdgroup
// (the split's probe, outputs recomputed with FMAs).
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
static_assert(THREADS == 256, "the spec launches 256 threads");

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
  // each copy would load them again from memory). Tiles wholly inside their
  // operand (all but the edge blocks' and a last partial k-tile) are copied by
  // a plan made once (sgemm::CopyPlan), not by per-copy index arithmetic.
  const sgemm::Operand<> A = t.A, B = t.B;
  const int row0 = t.row0, col0 = t.col0, K = t.K;
  const bool a_whole = row0 + BM <= A.rows && A.template vectorizes<AL>();
  const bool b_whole = col0 + BN <= B.cols && B.template vectorizes<BL>();
  const auto a_plan = sgemm::CopyPlan::of<ATile, THREADS>(A, row0, 0, BK * A.cs);
  const auto b_plan = sgemm::CopyPlan::of<BTile, THREADS>(B, 0, col0, BK * B.rs);
  auto start_loading = [&](int kt) {
    float* As = smem + (kt % STAGES) * STAGE_FLOATS;
    const bool whole_k = (kt + 1) * BK <= K;
    if (a_whole && whole_k) a_plan.template copy<BM * BK / 4 / THREADS>(As, kt);
    else sgemm::cp_async_tile<BM, BK, THREADS, AL>(As, A, row0, kt * BK);
    if (b_whole && whole_k) b_plan.template copy<BK * BN / 4 / THREADS>(As + A_FLOATS, kt);
    else sgemm::cp_async_tile<BK, BN, THREADS, BL>(As + A_FLOATS, B, kt * BK, col0);
  };

  // Prologue: the first STAGES - 1 k-tiles in flight. Every iteration commits
  // one group (empty past the end) so that "wait until STAGES - 2 groups are
  // pending" always means "the oldest k-tile has landed".
  for (int kt = 0; kt < STAGES - 1; ++kt) {
    if (kt < k_tiles) start_loading(kt);
    sgemm::cp_async_commit();
  }

  float acc[WM / 16][WN / 8][4] = {};
  float probe = 0.0f;  // NaN once this thread has split an Inf or NaN
  // B's split tiles hold B^T (lines of k): the B tile's element (k, n) is
  // element (n, k) of the N x K view, whose layout is the other one.
  constexpr sgemm::Layout BT = BL == sgemm::ROW_MAJOR ? sgemm::COL_MAJOR : sgemm::ROW_MAJOR;
  // The k-tile's 8-k steps as a loop, not unrolled: unrolled, the compiler
  // loads every step's fragments up front and, at BK = 32, spills.
  auto multiply_split = [&](int kt) {
    const float* tiles = split + (kt % 2) * SPLIT_FLOATS;
    sgemm::warp_tile_mma_split<WM / 16, WN / 8, BK, BM, BN, 1>(acc, tiles, tiles + A_SPLIT_FLOATS,
                                                               wm0, wn0);
  };
  for (int kt = 0; kt < k_tiles; ++kt) {
    sgemm::cp_async_wait<STAGES - 2>();
    // k-tile kt is visible to all threads, and all have finished k-tile kt - 1,
    // whose buffer the next copy reuses (with SPLIT: split k-tile kt - 1, and
    // multiplied k-tile kt - 2, whose split buffer k-tile kt's split reuses).
    __syncthreads();
    if (kt + STAGES - 1 < k_tiles) start_loading(kt + STAGES - 1);
    sgemm::cp_async_commit();
    const float* As = smem + (kt % STAGES) * STAGE_FLOATS;
    if constexpr (SPLIT) {
      sgemm::SplitTileStager<AL, BM, BK, THREADS> a_split;
      sgemm::SplitTileStager<BT, BN, BK, THREADS> b_split;
      if (kt > 0) multiply_split(kt - 1);
      a_split.fetch(As, [](int m, int k) { return ATile::offset(m, k); });
      b_split.fetch(As + A_FLOATS, [](int n, int k) { return BTile::offset(k, n); });
      float* into = split + (kt % 2) * SPLIT_FLOATS;
      a_split.store(into, probe);
      b_split.store(into + A_SPLIT_FLOATS, probe);
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
