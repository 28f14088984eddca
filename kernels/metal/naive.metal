#include "sgemm/schedule.h"
// Stage 1, naive: one thread per element of C.
//
// Each thread walks a row of A and a column of B straight from device memory:
// 2 loads per multiply-add and no reuse between threads, so it runs at the speed
// of the memory system (the caches catch some of the re-reads). Threads along x
// take neighbouring columns, so a simdgroup's writes of C (and its reads of a
// row-major B) are contiguous. A and B are read in whatever layout MLX passes
// (t.A(r, c) follows their strides).
const auto t = sgemm::locate_tile(
    int(threads_per_threadgroup.y), int(threads_per_threadgroup.x),
    threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int row = t.row0 + int(thread_position_in_threadgroup.y);
const int col = t.col0 + int(thread_position_in_threadgroup.x);
if (row < t.M && col < t.N) {
  float sum = 0.0f;
  for (int k = 0; k < t.K; ++k) {
    sum += t.A(row, k) * t.B(k, col);
  }
  t.C[row * t.ldc + col] = sum;
}
