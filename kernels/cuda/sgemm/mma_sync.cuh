// Tensor-core products by mma.sync (m16n8k8 TF32, 3xTF32) and the warp tiles built of
// them: one warp's MI x NI share of a block, multiplied from shared memory and stored to C.
#ifndef MLX_SGEMM_MMA_SYNC_CUH
#define MLX_SGEMM_MMA_SYNC_CUH

#include "schedule.cuh"
#include "ldmatrix.cuh"
#include "split_tile.cuh"
#include "tf32.cuh"

namespace sgemm {

// D += A * B for one m16n8k8 tile: A 16x8 row-major (4 registers per thread),
// B 8x8 column-major (2 registers), D 16x8 float32 (4 registers). Fragment
// layout, with g = lane / 4 and t = lane % 4:
//   a0 (g, t)  a1 (g+8, t)  a2 (g, t+4)  a3 (g+8, t+4)
//   b0 (t, g)  b1 (t+4, g)
//   d0 (g, 2t) d1 (g, 2t+1) d2 (g+8, 2t) d3 (g+8, 2t+1)
__device__ inline void mma_m16n8k8_tf32(
    float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// acc += part, tile by tile: a k-tile's products, summed from zero by the
// tensor cores, added to the running sum by the FP32 units (see
// warp_tile_mma_split).
template <int MI, int NI>
__device__ inline void add_tiles(float (&acc)[MI][NI][4], const float (&part)[MI][NI][4]) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e];
}

// acc += As * Bs over one shared-memory k-tile in one TF32 pass (cuBLAS's
// TF32 mode: the tensor cores round each float32 to TF32 and accumulate), for
// the warp whose WM x WN output tile starts at (wm0, wn0) of the block. As
// holds the block's BM x BK tile of A, Bs the BK x BN tile of B, laid out as
// ATile / BTile (SmemTile: either orientation). With the padded strides a
// warp's fragment reads (8 rows x 4 columns of A, 4 x 8 of B) hit 32
// different banks in either orientation.
template <int MI, int NI, int BK, typename ATile, typename BTile>
__device__ inline void warp_tile_mma_tf32(
    float (&acc)[MI][NI][4], const float* As, const float* Bs, int wm0, int wn0) {
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, tg = lane % 4;  // this lane's fragment coordinates
#pragma unroll
  for (int kk = 0; kk < BK; kk += 8) {
    uint32_t a[MI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const int r = wm0 + i * 16 + g, k = kk + tg;
      const float v[4] = {ATile::at(As, r, k), ATile::at(As, r + 8, k),
                          ATile::at(As, r, k + 4), ATile::at(As, r + 8, k + 4)};
#pragma unroll
      for (int e = 0; e < 4; ++e) a[i][e] = to_tf32(v[e]);
    }
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int k = kk + tg, col = wn0 + j * 8 + g;
      uint32_t b[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) b[e] = to_tf32(BTile::at(Bs, k + 4 * e, col));
#pragma unroll
      for (int i = 0; i < MI; ++i) mma_m16n8k8_tf32(acc[i][j], a[i], b[0], b[1]);
    }
  }
}

// acc += As * Bs over one k-tile to float32 accuracy (3xTF32), for the warp
// whose WM x WN output tile starts at (wm0, wn0) of the block, on k-tiles
// split already into their big and small TF32 parts (sgemm::SplitTile: As the
// block's BM x BK tile of A, Bs the BN x BK tile of B^T, in shared memory),
// each element split once for all the warps that read it. The fragments come
// by ldmatrix straight into the registers mma.sync reads: per 8 k the warp
// issues 2 MI + NI loads for 3 MI NI tensor-core products, and nothing else
// but their addresses, worked out once. Each product x_big y_big + x_small
// y_big + x_big y_small is issued term by term over the whole warp tile, the
// small cross terms first, big * big last (the small * small term falls below
// float32 rounding): an accumulator's three products are MI NI products apart,
// not back to back.
//
// The tensor cores add into their accumulator rounding toward zero, so letting
// them accumulate over all of K biases every step the same way and the error
// grows with K (measured on an H200: 25x cuBLAS SGEMM's at K = 4096;
// docs/performance-log.md, "3xTF32 accuracy: sums outside the tensor cores").
// So the k-tile's products go into a fresh accumulator `part`, which the FP32
// units, rounding to nearest, add to `acc` (after Ootomo & Yokota, 2022).
// Non-finite operands are the caller's concern (the split's probe): big parts
// are used in the cross terms as they are.
//
// UNROLL: how many of the k-tile's BK / 8 steps are unrolled. All, by default;
// a caller short of registers unrolls fewer, so that the compiler does not
// hoist every step's fragment loads to the top at the cost of spills.
template <int MI, int NI, int BK, int BM, int BN, int UNROLL = BK / 8>
__device__ inline void warp_tile_mma_split(
    float (&acc)[MI][NI][4], const float* As, const float* Bs, int wm0, int wn0) {
  using ATile = SplitTile<BM, BK>;
  using BTile = SplitTile<BN, BK>;
  const int lane = threadIdx.x % 32, matrix = lane / 8;
  // The row this lane names for ldmatrix: A's matrices are (rows 0-7, k 0-3),
  // (rows 8-15, k 0-3), (rows 0-7, k 4-7), (rows 8-15, k 4-7) of a 16-row
  // tile, a0..a3; B's (lines 0-7: k 0-3, k 4-7) big, then small: b0, b1 big
  // and b0, b1 small of an 8-line tile.
  const int a_row = wm0 + (matrix % 2) * 8 + lane % 8, a_k = (matrix / 2) * 4;
  const int b_line = wn0 + lane % 8, b_k = (matrix % 2) * 4;
  const bool b_small = matrix / 2;
  const uint32_t a_tile = static_cast<uint32_t>(__cvta_generic_to_shared(As));
  const uint32_t b_tile = static_cast<uint32_t>(__cvta_generic_to_shared(Bs));
  float part[MI][NI][4] = {};
#pragma unroll UNROLL
  for (int kk = 0; kk < BK; kk += 8) {
    uint32_t a_big[MI][4], a_small[MI][4], b[NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      // Row a_row + 16 i has the swizzle of a_row (l % 8 is the same).
      ldmatrix_x4(a_big[i], a_tile + 4 * (ATile::offset(a_row, kk + a_k, false) +
                                          i * 16 * ATile::LINE_FLOATS));
      ldmatrix_x4(a_small[i], a_tile + 4 * (ATile::offset(a_row, kk + a_k, true) +
                                            i * 16 * ATile::LINE_FLOATS));
    }
#pragma unroll
    for (int j = 0; j < NI; ++j)
      ldmatrix_x4(b[j], b_tile + 4 * (BTile::offset(b_line, kk + b_k, b_small) +
                                      j * 8 * BTile::LINE_FLOATS));
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int i = 0; i < MI; ++i) mma_m16n8k8_tf32(part[i][j], a_small[i], b[j][0], b[j][1]);
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int i = 0; i < MI; ++i) mma_m16n8k8_tf32(part[i][j], a_big[i], b[j][2], b[j][3]);
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int i = 0; i < MI; ++i) mma_m16n8k8_tf32(part[i][j], a_big[i], b[j][0], b[j][1]);
  }
  add_tiles(acc, part);
}

// Write a warp's MI x NI accumulator tiles to C, dropping what overhangs it.
// With `exact` (the block met an Inf or NaN, which the fast 3xTF32 split does
// not carry), each output is recomputed with float32 FMAs instead, as exact
// as any float32 product.
template <int MI, int NI, typename TA, typename TB>
__device__ inline void store_warp_tile(
    const Tile<TA, TB>& t, const float (&acc)[MI][NI][4], int wm0, int wn0, bool exact = false) {
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, tg = lane % 4;
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int row = t.row0 + wm0 + i * 16 + g;
      const int col = t.col0 + wn0 + j * 8 + 2 * tg;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = row + (e / 2) * 8, c = col + e % 2;
        if (r >= t.M || c >= t.N) continue;
        float v = acc[i][j][e];
        if (exact) {
          v = 0.0f;
          for (int k = 0; k < t.K; ++k) v = fmaf(t.A(r, k), t.B(k, c), v);
        }
        t.C[r * t.ldc + c] = v;
      }
    }
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_MMA_SYNC_CUH
