// Stage 2, tile_16 / tile_32: threadgroup-memory tiling (TILE is 16 or 32).
//
// A TILE x TILE threadgroup computes a TILE x TILE block of C. Each step along
// K, every thread loads one element of A and one of B into threadgroup memory,
// and then all threads read the whole TILE-wide strips from there: each element
// fetched from device memory is used TILE times instead of once. (Seed 000: on
// an M2, tile_16 beats tile_32, whose 1024 threads and 8 KiB per threadgroup
// leave fewer threadgroups resident to hide memory latency.)
threadgroup float As[TILE][TILE];
threadgroup float Bs[TILE][TILE];

const auto t = sgemm::locate_tile(
    TILE, TILE, threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tx = int(thread_position_in_threadgroup.x);
const int ty = int(thread_position_in_threadgroup.y);
const int row = t.row0 + ty;
const int col = t.col0 + tx;

float sum = 0.0f;
for (int k0 = 0; k0 < t.K; k0 += TILE) {
  // Out-of-range elements load as zero, so edge tiles need no special case below.
  As[ty][tx] = sgemm::load_or_zero(t.A, t.lda, row, k0 + tx, t.M, t.K);
  Bs[ty][tx] = sgemm::load_or_zero(t.B, t.ldb, k0 + ty, col, t.K, t.N);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are complete before anyone reads them
#pragma clang loop unroll(full)
  for (int k = 0; k < TILE; ++k) {
    sum += As[ty][k] * Bs[k][tx];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone is done reading before the next load overwrites
}
sgemm::store_clipped(t.C, t.ldc, row, col, t.M, t.N, sum);
