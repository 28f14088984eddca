#include "sgemm/schedule.cuh"
// Stage 2, tile_16 / tile_32: shared-memory tiling (TILE is 16 or 32).
//
// A TILE x TILE block of threads computes a TILE x TILE block of C. Each step
// along K, every thread loads one element of A and one of B into shared memory,
// and then all threads read the whole TILE-wide strips from there: each element
// fetched from device memory is used TILE times instead of once. Operands of
// float16 or bfloat16 (TA, TB) are converted to float32 on their way into
// shared memory (sgemm::Operand::at).
__shared__ float As[TILE][TILE];
__shared__ float Bs[TILE][TILE];

const sgemm::Tile<TA, TB> t = sgemm::locate_tile(
    TILE, TILE, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tx = threadIdx.x, ty = threadIdx.y;
const int row = t.row0 + ty;
const int col = t.col0 + tx;

float sum = 0.0f;
for (int k0 = 0; k0 < t.K; k0 += TILE) {
  // Out-of-range elements load as zero, so edge tiles need no special case below.
  As[ty][tx] = t.A.at(row, k0 + tx);
  Bs[ty][tx] = t.B.at(k0 + ty, col);
  __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
  for (int k = 0; k < TILE; ++k) {
    sum += As[ty][k] * Bs[k][tx];
  }
  __syncthreads();  // everyone is done reading before the next load overwrites
}
if (row < t.M && col < t.N) {
  t.C[row * t.ldc + col] = sum;
}
