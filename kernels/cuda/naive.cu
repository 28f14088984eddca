#include "sgemm/schedule.cuh"
// Stage 1, naive: one thread per element of C.
//
// Each thread walks a row of A and a column of B straight from device memory:
// 2 loads per multiply-add and no reuse between threads, so it runs at the speed
// of the memory system (the caches catch some of the re-reads). Threads along x
// take neighbouring columns, so for a row-major B a warp's reads of B and its
// writes of C coalesce. (Operands may have any strides, and element types TA,
// TB of float32, float16 or bfloat16, each element converted to float32 as it
// is read: see sgemm::Operand.)
const sgemm::Tile<TA, TB> t = sgemm::locate_tile(
    blockDim.y, blockDim.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int row = t.row0 + threadIdx.y;
const int col = t.col0 + threadIdx.x;
if (row < t.M && col < t.N) {
  float sum = 0.0f;
  for (int k = 0; k < t.K; ++k) {
    sum += t.A(row, k) * t.B(k, col);
  }
  t.C[row * t.ldc + col] = sum;
}
