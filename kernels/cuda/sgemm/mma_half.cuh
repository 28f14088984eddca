// Half tensor-core products by mma.sync (m16n8k16, f16 x f16 or bf16 x bf16 ->
// float32, sm_80 on) and a warp's MI x NI tiles of them over one k-tile of
// HalfKTiles, the fragments read by ldmatrix (transposed for an MN-major
// tile): half_mma's products (kernels/cuda/half_mma.cu).
#ifndef MLX_SGEMM_MMA_HALF_CUH
#define MLX_SGEMM_MMA_HALF_CUH

#include "half_tiles.cuh"
#include "ldmatrix.cuh"

namespace sgemm {

// D += A * B for one m16n8k16 tile of T (__half or __nv_bfloat16): A 16x16
// row-major (4 registers of 2 halves per thread), B 16x8 column-major (2
// registers), D 16x8 float32 (4 registers). Fragment layout, with g = lane / 4
// and t = lane % 4:
//   a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 8+2t..)  a3 (g+8, 8+2t..)
//   b0 (k 2t..2t+1, n g)  b1 (k 8+2t.., n g)
//   d0 (g, 2t) d1 (g, 2t+1) d2 (g+8, 2t) d3 (g+8, 2t+1)
template <typename T>
__device__ inline void mma_m16n8k16_half(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ inline void mma_m16n8k16_half<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ inline void mma_m16n8k16_half<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 matrices of a HalfKTile by one ldmatrix: those of lines
// line0 + 8 (m % 2 or m / 2) and k = k0 + 8 (the other half of m), m the
// matrix (lane / 8); which half of m steps the lines is LINE_BIT. K-major,
// each lane names its line's 16 bytes of k; MN-major (TRANS), its row of k's
// 16 bytes of 8 lines, read transposed. Both tiles' swizzles put the 8 rows
// of a matrix in 8 different 16-byte bank groups: no conflicts.
template <int LINES, int TRANS, int LINE_BIT>
__device__ inline void ldmatrix_half_tile(uint32_t (&r)[4], uint32_t tile, int line0, int k0) {
  const int lane = threadIdx.x % 32, m = lane / 8;
  const int line_step = LINE_BIT ? m / 2 : m % 2, k_step = LINE_BIT ? m % 2 : m / 2;
  if (TRANS) {
    ldmatrix_x4_trans(r, tile + HalfKTile<LINES>::offset(true, line0 + 8 * line_step, k0 + 8 * k_step + lane % 8));
  } else {
    ldmatrix_x4(r, tile + HalfKTile<LINES>::offset(false, line0 + 8 * line_step + lane % 8, k0 + 8 * k_step));
  }
}

// acc += A * B over one k-tile (HALF_K_TILE of k) for the warp whose MI x NI
// output tiles (16 x 8 each) start at row wm0 of the block's A tile and
// column wn0 of its B tile (BM and BN lines; shared-state addresses),
// TRANS_A / TRANS_B where the tile is MN-major. Per k16 step the warp loads
// MI fragments of A (a0..a3 = matrices rows +0/+8 by k +0/+8: LINE_BIT 0)
// and NI / 2 pairs of B's (b0, b1 of n8 tile j, then of j + 1: k +0/+8 by
// lines +0/+8, LINE_BIT 1), then issues the MI NI products.
template <typename T, int MI, int NI, int BM, int BN, int TRANS_A, int TRANS_B>
__device__ inline void warp_tile_mma_half(float (&acc)[MI][NI][4], uint32_t a_tile, uint32_t b_tile, int wm0,
                                          int wn0) {
  static_assert(NI % 2 == 0, "B's fragments come in pairs of n8 tiles");
#pragma unroll
  for (int k0 = 0; k0 < HALF_K_TILE; k0 += 16) {
    uint32_t a[MI][4], b[NI][2];
#pragma unroll
    for (int i = 0; i < MI; ++i) ldmatrix_half_tile<BM, TRANS_A, 0>(a[i], a_tile, wm0 + 16 * i, k0);
#pragma unroll
    for (int j = 0; j < NI; j += 2) {
      uint32_t r[4];
      ldmatrix_half_tile<BN, TRANS_B, 1>(r, b_tile, wn0 + 8 * j, k0);
      b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j) mma_m16n8k16_half<T>(acc[i][j], a[i], b[j][0], b[j][1]);
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_MMA_HALF_CUH
