// Asynchronous copies (cp.async, sm_80+): device memory -> shared memory without
// registers, so later k-tiles load while the warps compute; tiles, runs of 4, copy plans.
#ifndef MLX_SGEMM_ASYNC_COPY_CUH
#define MLX_SGEMM_ASYNC_COPY_CUH

#include "operand.cuh"
#include "smem_tile.cuh"
#include "swizzled_tile.cuh"

namespace sgemm {

// Copy BYTES (16, 8 or 4: what cp.async can) from gmem to smem; source bytes
// past `src_bytes` are not read and their destination is zero-filled (how edge
// tiles get zeros). 16-byte copies bypass L1 (.cg), the others cannot.
template <int BYTES>
__device__ inline void cp_async(void* smem, const void* gmem, int src_bytes) {
  static_assert(BYTES == 16 || BYTES == 8 || BYTES == 4, "cp.async copies 4, 8 or 16 bytes");
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(gmem), "r"(src_bytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n"
                 :: "r"(dst), "l"(gmem), "n"(BYTES), "r"(src_bytes));
  }
}

__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Wait until at most N committed groups are still in flight.
template <int N>
__device__ inline void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

// Start copying the 4 neighbours of (r, c) in direction L (along a row / down
// a column) into smem[0..3] as they are in memory (elements of type T), zeros
// outside x: one Vec4 copy (16 bytes of float, 8 of halves) when x vectorizes
// in that direction (`vector`, with r or c a multiple of 4), a partial one at
// the matrix's edge; else element by element: 4-byte copies of float, and of
// halves (cp.async has no 2-byte copy) plain loads and stores, which wait for
// their load (only operands whose strides allow no Vec4 take that way). Those
// stores reach the other threads through the same barrier as the copies. The
// tile copies below use it for their 16-byte chunks; small_m for each of its
// runs of 4.
template <Layout L, typename T>
__device__ inline void cp_async_vec4(T* smem, const Operand<T>& x, int r, int c, bool vector) {
  const int dr = L == COL_MAJOR, dc = L == ROW_MAJOR;
  const bool line = L == ROW_MAJOR ? r < x.rows : c < x.cols;  // the row (column) exists
  const int valid = line ? max(0, min(4, L == ROW_MAJOR ? x.cols - c : x.rows - r)) : 0;
  if (vector) {
    constexpr int BYTES = sizeof(typename Operand<T>::Vec4);
    cp_async<BYTES>(smem, valid ? &x.p[r * x.rs + c * x.cs] : x.p, int(sizeof(T)) * valid);
    return;
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const bool in = e < valid;
    const T* const src = in ? &x.p[(r + e * dr) * x.rs + (c + e * dc) * x.cs] : x.p;
    if constexpr (sizeof(T) == 4) cp_async<4>(smem + e, src, in ? 4 : 0);
    else smem[e] = in ? *src : Element<T>::zero();
  }
}

// The tile copies (cp_async_tile, cp_async_swizzled_tile, CopyPlan) take
// float32 operands alone: they move bytes into the tiles the tensor cores read
// as float32, which leaves no step to convert in. Half operands reach their
// kernels (tile_async, tile_wgmma) cast to float32 by MLX first
// (mlx_sgemm/build/specs.py, KernelSpec.converts_on_load).

// Start copying the ROWS x COLS tile of x at (r0, c0) into shared memory
// (laid out as SmemTile<L, ROWS, COLS>), zeros outside x. With 16-byte aligned
// rows (columns): one 16-byte copy per 4 elements, a partial one at the edge.
// Otherwise (odd strides): 4-byte copies, consecutive threads walking x's
// contiguous direction.
template <int ROWS, int COLS, int THREADS, Layout L>
__device__ inline void cp_async_tile(float* smem, const Operand<float>& x, int r0, int c0) {
  using Tile = SmemTile<L, ROWS, COLS>;
  constexpr bool ROW = L == ROW_MAJOR;
  constexpr int LINE = Tile::LINE;  // contiguous extent of the tile
  constexpr int VECTORS = ROWS * COLS / 4;
  static_assert(VECTORS % THREADS == 0, "every thread copies the same amount");
  if (x.vectorizes<L>()) {
#pragma unroll
    for (int j = 0; j < VECTORS / THREADS; ++j) {
      const Chunk ch = Tile::chunk(j * THREADS + threadIdx.x);
      cp_async_vec4<L>(smem + ch.smem, x, r0 + ch.r, c0 + ch.c, true);
    }
  } else {
#pragma unroll 1  // rolled: unrolled, the addresses would stay live in registers
    for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
      const int line = i / LINE, pos = i % LINE;
      const int gr = r0 + (ROW ? line : pos), gc = c0 + (ROW ? pos : line);
      const bool valid = gr < x.rows && gc < x.cols;
      cp_async<4>(smem + line * Tile::LD + pos, valid ? &x.p[gr * x.rs + gc * x.cs] : x.p,
                  valid ? 4 : 0);
    }
  }
}

// Start copying the ROWS x BK tile of x at (r0, k0) into a SwizzledTile,
// zeros outside x: 16-byte copies when x has layout L = ROW_MAJOR with 16-byte
// aligned rows (the k-major tile is then x's own orientation), else 4-byte
// copies with consecutive threads walking x's contiguous direction (a
// transposed view is transposed on the way in).
template <int ROWS, int BK, int THREADS, Layout L>
__device__ inline void cp_async_swizzled_tile(float* smem, const Operand<float>& x, int r0, int k0) {
  using Tile = SwizzledTile<ROWS, BK>;
  constexpr int VECTORS = ROWS * BK / 4;
  static_assert(VECTORS % THREADS == 0, "every thread copies the same amount");
  if (L == ROW_MAJOR && x.vectorizes<ROW_MAJOR>()) {
#pragma unroll 1  // edge tiles only (tile_wgmma copies the others by a CopyPlan): rolled, no addresses kept live
    for (int j = 0; j < VECTORS / THREADS; ++j) {
      const Chunk ch = Tile::chunk(j * THREADS + threadIdx.x);
      cp_async_vec4<ROW_MAJOR>(smem + ch.smem, x, r0 + ch.r, k0 + ch.c, true);
    }
  } else {
#pragma unroll 1  // rolled: unrolled, the addresses would stay live in registers
    for (int i = threadIdx.x; i < ROWS * BK; i += THREADS) {
      const int r = L == COL_MAJOR ? i % ROWS : i / BK, k = L == COL_MAJOR ? i / ROWS : i % BK;
      const bool valid = r0 + r < x.rows && k0 + k < x.cols;
      cp_async<4>(smem + Tile::offset(r, k), valid ? &x.p[(r0 + r) * x.rs + (k0 + k) * x.cs] : x.p,
                  valid ? 4 : 0);
    }
  }
}

// The 16-byte copies one thread makes of every k-tile of a tile that lies
// wholly inside its operand (Tile: SmemTile or SwizzledTile), worked out
// once: copy j of k-tile kt reads src + kt * k_step + j * j_step and writes
// smem + j * smem_step of the stage. Chunk j + 1 of a thread is chunk j moved
// by THREADS chunks, the same move for every j (whole lines of the tile per
// step), so two strides say it all. The general copy spends ~30
// instructions of index arithmetic and bounds checks per copy; this, ~3
// (measured with ncu on tile_wgmma: its producer warps issued ~700
// instructions per k-tile, ~470 of them for 16 copies, and the consumers
// waited for them; docs/performance-log.md, "tile_wgmma: copies by a plan
// made once").
struct CopyPlan {
  const float* src;
  int64_t j_step, k_step;  // elements
  int smem, smem_step;     // floats

  template <typename Tile, int THREADS>
  __device__ static CopyPlan of(const Operand<float>& x, int r0, int c0, int64_t k_step) {
    static_assert(THREADS % Tile::LINE_CHUNKS == 0, "each step moves by whole lines");
    const Chunk first = Tile::chunk(threadIdx.x), next = Tile::chunk(threadIdx.x + THREADS);
    auto address = [&](const Chunk& ch) { return x.p + (r0 + ch.r) * x.rs + (c0 + ch.c) * x.cs; };
    return {address(first), address(next) - address(first), k_step, first.smem,
            next.smem - first.smem};
  }

  template <int COPIES>
  __device__ void copy(float* stage, int kt) const {
    const float* s = src + kt * k_step;
#pragma unroll
    for (int j = 0; j < COPIES; ++j) cp_async<16>(stage + smem + j * smem_step, s + j * j_step, 16);
  }
};

// The copies of a block's k-tiles, A's BM x BK from row row0 and B's BK x BN
// from column col0, into a ring of STAGES stages of STAGE_FLOATS floats in
// shared memory, k-tile kt in stage kt % STAGES, each a SmemTile per operand in
// its own layout (A's tile, then B's B_OFFSET floats on). Tiles wholly inside
// their operand (all but the edge blocks' and a last partial k-tile) are copied
// by plans made once (CopyPlan), the others with bounds checks (cp_async_tile).
// One group of copies is committed a k-tile, empty past the end, so that
// "wait until STAGES - 2 groups are pending" (wait_oldest) always means "the
// oldest k-tile in flight has landed" (this thread's copies of it).
template <int BM, int BN, int BK, int THREADS, Layout AL, Layout BL, int B_OFFSET, int STAGES,
          int STAGE_FLOATS>
struct KTileCopies {
  using ATile = SmemTile<AL, BM, BK>;
  using BTile = SmemTile<BL, BK, BN>;
  float* ring;
  Operand<float> A, B;
  int row0, col0, k_tiles;
  bool a_whole, b_whole;
  CopyPlan a_plan, b_plan;

  __device__ KTileCopies(float* ring, const Operand<float>& a, const Operand<float>& b, int row0,
                         int col0)
      : ring(ring), A(a), B(b), row0(row0), col0(col0), k_tiles((a.cols + BK - 1) / BK),
        a_whole(row0 + BM <= a.rows && a.template vectorizes<AL>()),
        b_whole(col0 + BN <= b.cols && b.template vectorizes<BL>()),
        a_plan(CopyPlan::of<ATile, THREADS>(a, row0, 0, BK * a.cs)),
        b_plan(CopyPlan::of<BTile, THREADS>(b, 0, col0, BK * b.rs)) {}

  // The stage k-tile kt is copied into.
  __device__ float* stage(int kt) const { return ring + (kt % STAGES) * STAGE_FLOATS; }

  // The first STAGES - 1 k-tiles on their way.
  __device__ void start_first() const {
    for (int kt = 0; kt < STAGES - 1; ++kt) start_if_any(kt);
  }
  // Once k-tile kt has landed and every thread is done with k-tile kt - 1:
  // k-tile kt + STAGES - 1 on its way, into kt - 1's stage.
  __device__ void start_next(int kt) const { start_if_any(kt + STAGES - 1); }
  // Wait until this thread's copies of the oldest k-tile in flight have landed.
  __device__ static void wait_oldest() { cp_async_wait<STAGES - 2>(); }

 private:
  __device__ void start_if_any(int kt) const {
    if (kt < k_tiles) {
      float* into = stage(kt);
      const bool whole_k = (kt + 1) * BK <= A.cols;
      if (a_whole && whole_k) a_plan.template copy<BM * BK / 4 / THREADS>(into, kt);
      else cp_async_tile<BM, BK, THREADS, AL>(into, A, row0, kt * BK);
      if (b_whole && whole_k) b_plan.template copy<BK * BN / 4 / THREADS>(into + B_OFFSET, kt);
      else cp_async_tile<BK, BN, THREADS, BL>(into + B_OFFSET, B, kt * BK, col0);
    }
    cp_async_commit();
  }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_ASYNC_COPY_CUH
