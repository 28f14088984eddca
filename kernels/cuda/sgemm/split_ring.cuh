// A warp-specialized block's ring of split k-tiles: a loading warpgroup fills it,
// two multiplying warpgroups read it (SplitRing), with named barriers between them.
#ifndef MLX_SGEMM_SPLIT_RING_CUH
#define MLX_SGEMM_SPLIT_RING_CUH

#include "mma_sync.cuh"
#include "producer_consumer.cuh"
#include "split_tile.cuh"

namespace sgemm {

// STAGES buffers, each a k-tile of A (SplitTile<BM, BK>) and one of B^T
// (SplitTile<BN, BK>), split into their 3xTF32 parts. Warpgroup 0 (threads
// 0..127) loads: for k-tile kt it takes buffer kt % STAGES once the
// multipliers are done with what it held (slot), stores the k-tile there and
// says so (loaded); the 8 warps of threads 128..383 multiply each k-tile as it
// is loaded, as 2 x 4 warps of 64x32 tiles of a 128x128 block, and hand its
// buffer back (multiply). Buffer s is loaded when named barrier FULL(s) = 1 + s
// completes, free when EMPTY(s) = 1 + STAGES + s does: ids up to 2 STAGES,
// the ones above are the loaders' own.
//
// setmaxnreg (sm_90a) moves registers from the loaders to the multipliers:
// 384 threads x 168 at launch (the spec's min_blocks = 1), LOAD_REGISTERS
// for a loader (what its kernel's loading takes without spills), the rest,
// 176-192, for a multiplier: its 64 accumulators, 64 of the k-tile's partial
// sums and 48 of fragments, none spilled with the k-tile's 8-k steps as a
// loop (unrolled, the compiler loads every step's fragments up front).
template <int BM, int BN, int BK, int STAGES, int LOAD_REGISTERS_>
struct SplitRing {
  static constexpr int THREADS = 384, LOAD_THREADS = 128, MMA_THREADS = 256;
  static constexpr int WM = 64, WN = 32, WARPS_N = BN / WN;
  static_assert((BM / WM) * WARPS_N * 32 == MMA_THREADS, "8 multiplying warps");
  static_assert(2 * STAGES < 15, "two named barriers a buffer, ids 1..15, one left for the loaders");
  static constexpr int A_FLOATS = SplitTile<BM, BK>::FLOATS;
  static constexpr int STAGE_FLOATS = A_FLOATS + SplitTile<BN, BK>::FLOATS;
  static constexpr int LOADERS_BARRIER = 2 * STAGES + 1;  // free for the loaders alone
  static constexpr int ENTRY_REGISTERS = 168, LOAD_REGISTERS = LOAD_REGISTERS_;
  static constexpr int MMA_REGISTERS =
      (THREADS * ENTRY_REGISTERS - LOAD_THREADS * LOAD_REGISTERS) / MMA_THREADS / 8 * 8;

  float* ring;  // shared memory

  __device__ static int full(int s) { return 1 + s; }
  __device__ static int empty(int s) { return 1 + STAGES + s; }
  __device__ static bool loads() { return threadIdx.x < LOAD_THREADS; }

  // Loaders: the buffer for k-tile kt, once the k-tile it held is multiplied.
  __device__ float* slot(int kt) const {
    const int s = kt % STAGES;
    if (kt >= STAGES) barrier_sync(empty(s), THREADS);
    return ring + s * STAGE_FLOATS;
  }
  // Loaders: k-tile kt is in its buffer.
  __device__ void loaded(int kt) const { barrier_arrive(full(kt % STAGES), THREADS); }

  // Multipliers: acc += A * B over k_tiles k-tiles, for the warp tile at
  // (wm0, wn0), handing each buffer back where the loaders have a k-tile for it.
  template <int MI, int NI>
  __device__ void multiply(float (&acc)[MI][NI][4], int k_tiles, int wm0, int wn0) const {
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = kt % STAGES;
      barrier_sync(full(s), THREADS);
      const float* tiles = ring + s * STAGE_FLOATS;
      warp_tile_mma_split<MI, NI, BK, BM, BN, 1>(acc, tiles, tiles + A_FLOATS, wm0, wn0);
      if (kt + STAGES < k_tiles) barrier_arrive(empty(s), THREADS);
    }
  }

  // The whole block, each thread in its part, C = A B over k_tiles k-tiles.
  // Loaders: LOAD_REGISTERS, and load(probe), which fills the ring (slot,
  // loaded) and turns probe NaN if it split an Inf or NaN (SplitTileStager's
  // probe). Multipliers: the rest of the registers, the products, then C,
  // recomputed with FMAs where a loader met an Inf or NaN.
  // *saw_non_finite: shared memory, 0 before the call.
  template <typename TA, typename TB, typename Load>
  __device__ void run(const Tile<TA, TB>& t, int k_tiles, int* saw_non_finite, Load&& load) const {
    __syncthreads();  // *saw_non_finite is 0
    if (loads()) {
      registers_decrease<LOAD_REGISTERS>();
      float probe = 0.0f;
      load(probe);
      if (!(probe == 0.0f)) *saw_non_finite = 1;
      __syncthreads();  // *saw_non_finite is final
    } else {
      registers_increase<MMA_REGISTERS>();
      const int warp = (threadIdx.x - LOAD_THREADS) / 32;
      const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
      float acc[WM / 16][WN / 8][4] = {};
      multiply(acc, k_tiles, wm0, wn0);
      __syncthreads();
      store_warp_tile(t, acc, wm0, wn0, *saw_non_finite != 0);
    }
  }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_SPLIT_RING_CUH
