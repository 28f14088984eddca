// Tensor-core products by mma.sync (m16n8k8 TF32, 3xTF32) and the warp tiles built of
// them: one warp's MI x NI share of a block, multiplied from shared memory and stored to C.
#ifndef MLX_SGEMM_MMA_SYNC_CUH
#define MLX_SGEMM_MMA_SYNC_CUH

#include "schedule.cuh"
#include "tf32.cuh"

namespace sgemm {

// D += A * B for one m16n8k8 tile: A 16x8 row-major (4 registers per thread),
// B 8x8 column-major (2 registers), D 16x8 float32 (4 registers). Fragment
// layout, with g = lane / 4 and t = lane % 4:
//   a0 (g, t)  a1 (g+8, t)  a2 (g, t+4)  a3 (g+8, t+4)
//   b0 (t, g)  b1 (t+4, g)
//   d0 (g, 2t) d1 (g, 2t+1) d2 (g+8, 2t) d3 (g+8, 2t+1)
__device__ inline void mma_m16n8k8_tf32(
    float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += A * B to float32 accuracy with three TF32 tensor-core products of the
// operands' big and small parts (sgemm::split_tf32_fast): the small cross
// terms first, big * big last; the a_small * b_small term falls below float32
// rounding.
__device__ inline void mma_3xtf32(
    float (&d)[4], const uint32_t (&a_big)[4], const uint32_t (&a_small)[4],
    const uint32_t (&b_big)[2], const uint32_t (&b_small)[2]) {
  mma_m16n8k8_tf32(d, a_small, b_big);
  mma_m16n8k8_tf32(d, a_big, b_small);
  mma_m16n8k8_tf32(d, a_big, b_big);
}

// acc += part, tile by tile: a k-tile's products, summed from zero by the
// tensor cores, added to the running sum by the FP32 units (see
// warp_tile_mma_presplit).
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
      for (int i = 0; i < MI; ++i) mma_m16n8k8_tf32(acc[i][j], a[i], b);
    }
  }
}

// acc += As * Bs over one shared-memory k-tile to float32 accuracy (3xTF32),
// for the warp whose WM x WN output tile starts at (wm0, wn0), on operands
// split already: As_big / As_small hold the big and small TF32 parts of the
// block's A tile, Bs_big / Bs_small of B's (sgemm::load_tile_split, or a pass
// over a landed k-tile), each element split once for all the warps that read
// it. A fragment is then two shared-memory loads, no arithmetic, and the
// tensor cores get their three products per tile with little else between
// them. Tiles are laid out as ATile / BTile (SmemTile: either orientation),
// whose padded strides make the fragment reads conflict-free.
//
// The tensor cores add into their accumulator rounding toward zero, so letting
// them accumulate over all of K biases every step the same way and the error
// grows with K (measured on an H200: 25x cuBLAS SGEMM's at K = 4096;
// docs/performance-log.md, "3xTF32 accuracy: sums outside the tensor cores").
// So the k-tile's products go into a fresh accumulator `part`, which the FP32
// units, rounding to nearest, add to `acc` (after Ootomo & Yokota, 2022).
// Non-finite operands are the caller's concern (the split's probe): big parts
// are used in the cross terms as they are.
template <int MI, int NI, int BK, typename ATile, typename BTile>
__device__ inline void warp_tile_mma_presplit(
    float (&acc)[MI][NI][4], const float* As_big, const float* As_small, const float* Bs_big,
    const float* Bs_small, int wm0, int wn0) {
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, tg = lane % 4;
  float part[MI][NI][4] = {};
#pragma unroll
  for (int kk = 0; kk < BK; kk += 8) {
    uint32_t a_big[MI][4], a_small[MI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const int r = wm0 + i * 16 + g, k = kk + tg;
      const int rows[4] = {r, r + 8, r, r + 8}, ks[4] = {k, k, k + 4, k + 4};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        a_big[i][e] = __float_as_uint(ATile::at(As_big, rows[e], ks[e]));
        a_small[i][e] = __float_as_uint(ATile::at(As_small, rows[e], ks[e]));
      }
    }
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int k = kk + tg, col = wn0 + j * 8 + g;
      uint32_t b_big[2], b_small[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        b_big[e] = __float_as_uint(BTile::at(Bs_big, k + 4 * e, col));
        b_small[e] = __float_as_uint(BTile::at(Bs_small, k + 4 * e, col));
      }
#pragma unroll
      for (int i = 0; i < MI; ++i) mma_3xtf32(part[i][j], a_big[i], a_small[i], b_big, b_small);
    }
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
