#include "sgemm/epilogue.h"
#include "sgemm/load.h"
#include "sgemm/schedule.h"
// Stage 2, tile_16 / tile_32: threadgroup-memory tiling (TILE is 16 or 32).
//
// A TILE x TILE threadgroup computes a TILE x TILE block of C. Each step along
// K, every thread loads one element of A and one of B into threadgroup memory,
// and then all threads read the whole TILE-wide strips from there: each element
// fetched from device memory is used TILE times instead of once. (The M2 SGEMM
// journey: on an M2, tile_16 beats tile_32, whose 1024 threads and 8 KiB per threadgroup
// leave fewer threadgroups resident to hide memory latency.)
//
// Which element a thread loads follows the operand's layout (sgemm::load_tile
// with one element per thread): thread (tx, ty) takes (ty, tx) of a row-major
// tile and (tx, ty) of a column-major one (a transposed view), so neighbouring
// threads read neighbouring addresses either way. (The + 1 column puts the
// elements of a tile column in different memory banks, for the column-major
// case's writes down a column.)
threadgroup float As[TILE][TILE + 1];
threadgroup float Bs[TILE][TILE + 1];

const auto t = sgemm::locate_tile(
    TILE, TILE, threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tx = int(thread_position_in_threadgroup.x);
const int ty = int(thread_position_in_threadgroup.y);
const int tid = ty * TILE + tx;
const int row = t.row0 + ty;
const int col = t.col0 + tx;

float sum = 0.0f;
for (int k0 = 0; k0 < t.K; k0 += TILE) {
  // Out-of-range elements load as zero, so edge tiles need no special case below.
  sgemm::load_tile<TILE>(As, t.A, t.row0, k0, tid, TILE * TILE);
  sgemm::load_tile<TILE>(Bs, t.B, k0, t.col0, tid, TILE * TILE);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are complete before anyone reads them
#pragma clang loop unroll(full)
  for (int k = 0; k < TILE; ++k) {
    sum += As[ty][k] * Bs[k][tx];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone is done reading before the next load overwrites
}
sgemm::store_clipped(t.C, t.ldc, row, col, t.M, t.N, sum);
