// Global -> shared copies through registers: KTileStager for double-buffered k-tiles
// (fetch the next while computing on this one, then store).
// Operands of any element type; shared memory holds float32 (converted on the way).
#ifndef MLX_SGEMM_LOAD_CUH
#define MLX_SGEMM_LOAD_CUH

#include "operand.cuh"

namespace sgemm {

// A tile copy in two halves, for double buffering, for the k-tiles of an operand
// whose rows are k (the K x M view of A, B): the ROWS x COLS tiles at (k0, c0)
// for k0 = 0, ROWS, 2 ROWS, ... fetch() starts the global loads of a thread's
// share of one into registers, and the thread computes on the previous tile
// while they are in flight; store() then writes them to shared memory (only
// there does the thread wait for them).
//
// The fetched elements stay in registers as they are in memory (Operand::Vec4:
// half the registers for halves) and are converted to float32 in store():
// converted in fetch(), the conversion would wait there for the loads it is
// meant to overlap.
//
// Which 4 elements a thread moves: 4 neighbours along x's contiguous direction,
// consecutive threads on consecutive addresses, so loads coalesce. A row-major x
// is copied one 16-byte store per load. A column-major x (a row-major A, or B a
// transposed view) is scattered into four rows of the tile, and there a warp
// takes 16 columns x 8 rows (two runs of 4 of each column: one 32-byte sector
// of float32, half of one of halves)
// instead of 4 columns x 32 rows. With a row stride LD = 4 (mod 8)
// the two float4s of a column land 16 banks apart (4 LD = 16 mod 32) and the 16
// columns fill the other banks: each of the 4 scattered stores is served in one
// pass. That mapping puts a warp's 8 float4s of a column onto 2 banks, a
// 4-way conflict, whatever the stride (as long as rows stay 16-byte aligned).
template <int ROWS, int COLS, int THREADS, Layout L, typename T = float>
struct KTileStager {
  static_assert(ROWS % 4 == 0 && COLS % 4 == 0, "whole runs of 4");
  static_assert(L == ROW_MAJOR || (ROWS % 8 == 0 && COLS % 16 == 0), "16 x 8 per warp");
  static constexpr int VECTORS = ROWS * COLS / 4 / THREADS;  // runs of 4 per thread
  static_assert(VECTORS * 4 * THREADS == ROWS * COLS, "every thread moves the same amount");
  using Vec4 = typename Operand<T>::Vec4;

  Vec4 v[VECTORS];

  // Top-left (r, c) of the thread's j-th run of 4 in the tile.
  __device__ static void slot(int j, int& r, int& c) {
    const int i = j * THREADS + threadIdx.x;
    if (L == ROW_MAJOR) {
      r = i / (COLS / 4);
      c = (i % (COLS / 4)) * 4;
    } else {
      const int lane = i % 32, warp = i / 32;
      c = (warp % (COLS / 16)) * 16 + lane % 16;
      r = (warp / (COLS / 16)) * 8 + (lane / 16) * 4;
    }
  }

  // Load the tile at (k0, c0), any tile: each run of 4 is checked against x's
  // edges (zeros outside), one Vec4 load where x allows it.
  __device__ void fetch(const Operand<T>& x, int k0, int c0) {
    const bool vector = x.template vectorizes<L>();
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
      int r, c;
      slot(j, r, c);
      v[j] = x.template load4_raw<L>(k0 + r, c0 + c, vector);
    }
  }

  // Tiles wholly inside x (all but the edge blocks' and a last partial
  // k-tile) are loaded by a plan made once, as CopyPlan does for cp.async:
  // the thread's run j of the tile at (k0, c0) lies at base + k0 * (k's
  // stride) + row_step(j) * (row stride) + col_step(j) * (column stride),
  // where base is its run 0 at (0, c0), the steps are compile-time and one
  // of the two strides is 1 (the layout). An add per load, where the checked
  // fetch redoes the slot arithmetic and the bounds (and, in tile_threads'
  // out-of-line main loop, rereads x from memory): tile_threads 34.9 -> 36.4
  // TFLOP/s at 4096^3 on an H200 (docs/performance-log.md, "tile_threads:
  // k-tiles loaded by a plan").
  struct Plan {
    const T* base;
    int64_t stride;  // x's stride that is not 1: rs (row-major) or cs (column-major)
  };
  __device__ static Plan plan(const Operand<T>& x, int c0) {
    int r, c;
    slot(0, r, c);
    return {x.p + r * x.rs + (c0 + c) * x.cs, L == ROW_MAJOR ? x.rs : x.cs};
  }
  // slot(j) - slot(0), the same for every thread (see slot: the threads'
  // first runs tile whole rows, or whole 16 x 8 warp blocks, of the tile).
  static constexpr int WARPS = THREADS / 32, WARP_COLS = COLS / 16;
  static_assert(L == COL_MAJOR || THREADS % (COLS / 4) == 0, "j moves by whole rows");
  static_assert(L == ROW_MAJOR || (THREADS % 32 == 0 && WARP_COLS % WARPS == 0),
                "j moves by whole warp blocks");
  __host__ __device__ static constexpr int row_step(int j) {
    return L == ROW_MAJOR ? j * (THREADS / (COLS / 4)) : (j * WARPS / WARP_COLS) * 8;
  }
  __host__ __device__ static constexpr int col_step(int j) {
    return L == ROW_MAJOR ? 0 : (j * WARPS % WARP_COLS) * 16;
  }
  // Load the tile at (k0, c0) of a plan made for c0: a tile inside x, which
  // vectorizes along L.
  __device__ void fetch(const Plan& plan, int k0) {
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
      const T* p = L == ROW_MAJOR
                       ? plan.base + (k0 + row_step(j)) * plan.stride
                       : plan.base + (k0 + row_step(j)) + col_step(j) * plan.stride;
      v[j] = *reinterpret_cast<const Vec4*>(p);
    }
  }

  // Write the fetched tile to smem[r][c] (row stride LD), as float32.
  template <int LD>
  __device__ void store(float* smem) const {
    static_assert(LD % 4 == 0, "16-byte rows");
    static_assert(L == ROW_MAJOR || LD % 8 == 4, "conflict-free scatter (see above)");
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
      int r, c;
      slot(j, r, c);
      const float4 f = Element<T>::to_float4(v[j]);
      if (L == ROW_MAJOR) {
        *reinterpret_cast<float4*>(smem + r * LD + c) = f;
      } else {
        smem[r * LD + c] = f.x;
        smem[(r + 1) * LD + c] = f.y;
        smem[(r + 2) * LD + c] = f.z;
        smem[(r + 3) * LD + c] = f.w;
      }
    }
  }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_LOAD_CUH
