// Fragment loads from shared memory by ldmatrix: four 8-row matrices of 16-byte rows
// at once, each lane receiving its fragment registers in the order mma.sync reads them,
// as they lie or transposed (16-bit elements).
#ifndef MLX_SGEMM_LDMATRIX_CUH
#define MLX_SGEMM_LDMATRIX_CUH

namespace sgemm {

// Four 8x16-byte matrices from shared memory (ldmatrix .x4): lane l names the
// 16-byte row (l % 8) of matrix l / 8 at `row` (a shared-state-space address,
// 16-byte aligned); register m of lane l receives bytes 4 (l % 4)..+3 of row
// l / 4 of matrix m. That is the mma.sync fragment layout for 32-bit elements
// (TF32: element l % 4 of row l / 4) and for bytes (int8: elements
// 4 (l % 4)..+3), see sgemm::mma_m16n8k8_tf32 and sgemm::mma_m16n8k32_s8.
// The 8 rows of a matrix are read in one pass when they lie in 8 different
// 16-byte bank groups.
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], uint32_t row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}

// The same four matrices transposed on the way (ldmatrix .x4 .trans, 16-bit
// elements): register m of lane l receives elements (2 (l % 4), l / 4) and
// (2 (l % 4) + 1, l / 4) of matrix m, the row index being the 16-byte row
// named. For a tile whose rows run along M or N (an MN-major operand), rows
// of 8 k make the fragments mma.sync reads along k (half_mma's transposed A,
// row-major B).
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}

}  // namespace sgemm

#endif  // MLX_SGEMM_LDMATRIX_CUH
