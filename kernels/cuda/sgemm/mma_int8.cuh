// INT8 tensor-core products by mma.sync (m16n8k32, int8 x int8 -> int32) and
// their fragment loads from shared memory by ldmatrix: the residue GEMMs of the
// INT8 emulation (kernels/cuda/int8_residue_gemm.cu).
#ifndef MLX_SGEMM_MMA_INT8_CUH
#define MLX_SGEMM_MMA_INT8_CUH

#include "ldmatrix.cuh"

namespace sgemm {

// D += A * B for one m16n8k32 tile: A 16x32 int8 row-major (4 registers of 4
// bytes per thread), B 32x8 int8 column-major (2 registers), D 16x8 int32 (4
// registers). Fragment layout, with g = lane / 4 and t = lane % 4 (k in bytes):
//   a0 (g, 4t..4t+3)  a1 (g+8, 4t..)  a2 (g, 16+4t..)  a3 (g+8, 16+4t..)
//   b0 (k 4t..4t+3, n g)  b1 (k 16+4t.., n g)
//   d0 (g, 2t) d1 (g, 2t+1) d2 (g+8, 2t) d3 (g+8, 2t+1)
// The int32 sum wraps on overflow; the emulation keeps K * 128^2 < 2^31.
__device__ inline void mma_m16n8k32_s8(
    int32_t (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Their fragments by ldmatrix (sgemm::ldmatrix_x4): for int8 A's a0..a3 are
// the matrices (rows 0-7, k 0-15), (rows 8-15, k 0-15), (rows 0-7, k 16-31),
// (rows 8-15, k 16-31); an n8 tile of B stored n-major (K contiguous) gives
// b0, b1 of one k32 step per two matrices.
// Where lane `lane` points ldmatrix_x4 for the A fragment of the 16 rows from
// `row0` and the 32 bytes of k from `k0` in a tile of rows `ld` bytes apart.
__device__ inline uint32_t a_fragment_row(uint32_t tile, int ld, int row0, int k0, int lane) {
  const int m = lane / 8;
  return tile + (row0 + (m % 2) * 8 + lane % 8) * ld + k0 + (m / 2) * 16;
}

// The same for B's n8 tile from `col0` (n-major rows `ld` bytes apart): the
// four matrices are its k bytes 0-15, 16-31, 32-47, 48-63, so registers 0, 1
// serve the first k32 step of a 64-byte k-tile and 2, 3 the second.
__device__ inline uint32_t b_fragment_row(uint32_t tile, int ld, int col0, int lane) {
  return tile + (col0 + lane % 8) * ld + (lane / 8) * 16;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_MMA_INT8_CUH
