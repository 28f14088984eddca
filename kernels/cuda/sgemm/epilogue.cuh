// Storing a block's results to C: clipped 16-byte stores, the small-M kernels' sum of
// their partial-sum slots, and the NaN tile that marks a launch the kernel disagrees with.
#ifndef MLX_SGEMM_EPILOGUE_CUH
#define MLX_SGEMM_EPILOGUE_CUH

#include "operand.cuh"
#include "schedule.cuh"

namespace sgemm {

// Store columns c..c+3 of row r of a row-major matrix, dropping what falls
// outside it; one 16-byte store when whole and aligned.
__device__ inline void store4_clipped(
    float* p, int64_t ld, int r, int c, int rows, int cols, bool aligned, float4 v) {
  if (r >= rows) return;
  float* dst = p + r * ld + c;
  if (aligned && c + 3 < cols) {
    *reinterpret_cast<float4*>(dst) = v;
    return;
  }
  if (c < cols) dst[0] = v.x;
  if (c + 1 < cols) dst[1] = v.y;
  if (c + 2 < cols) dst[2] = v.z;
  if (c + 3 < cols) dst[3] = v.w;
}

// A small-M block launched with a grid, thread count or shared memory that its
// template disagrees with would leave parts of C unwritten: it writes NaN over
// its tile instead, which no check can miss.
template <int BLOCK_M, int BN, typename TA, typename TB>
__device__ inline void write_nan_tile(const Tile<TA, TB>& t) {
  for (int i = threadIdx.x; i < BLOCK_M * BN; i += blockDim.x) {
    const int r = t.row0 + i / BN, col = t.col0 + i % BN;
    if (r < t.M && col < t.N) t.C[r * t.ldc + col] = __int_as_float(0x7fc00000);
  }
}

// The small-M kernels' last step: `slots` partial sums of the block's C, each
// BLOCK_M x BN floats row-major, one after another in shared memory, added in
// order (the same order every run) and the block's first `rows` rows stored.
template <int BLOCK_M, int BN, int THREADS, typename TA, typename TB>
__device__ inline void store_slot_sums(const Tile<TA, TB>& t, const float* slots, int used, int rows) {
  const bool c_aligned = t.ldc % 4 == 0 && is_16_byte_aligned(t.C);
  for (int i = threadIdx.x; i < rows * BN / 4; i += THREADS) {
    const float4* s = reinterpret_cast<const float4*>(slots) + i;
    float4 sum = s[0];
    for (int q = 1; q < used; ++q) {
      const float4 v = s[q * BLOCK_M * BN / 4];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    store4_clipped(t.C, t.ldc, t.row0 + i / (BN / 4), t.col0 + 4 * (i % (BN / 4)), t.M, t.N,
                   c_aligned, sum);
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_EPILOGUE_CUH
