// Which block of C a threadgroup computes: Tile and locate_tile (batch entry,
// tile row and column, split-K stretch), from the grid position and `params`.
#ifndef MLX_SGEMM_METAL_SCHEDULE_H
#define MLX_SGEMM_METAL_SCHEDULE_H

#include "operand.h"
#include "params.h"

namespace sgemm {

// One threadgroup's job: one block of C in one batch entry, the operands of that
// batch entry, and where its block of C goes (C is always row-major).
template <typename PA, typename PB>
struct Tile {
  int M, N, K;
  int row0, col0;    // first row and column of C this block writes
  Operand<PA> A;     // M x K
  Operand<PB> B;     // K x N
  int64_t c_offset;  // of this batch entry's C in c (and in c_in)
  device float* C;
  int64_t ldc;
};

// Threadgroups are numbered along the grid's x axis: K split, batch entry, then
// tile row, then tile column (`group` is threadgroup_position_in_grid.x).
// Operands have the output's batch rank (the Python side merges and pads batch
// dims); a batch dim of extent 1 is broadcast, so it adds no offset. With K
// split (Plan.params) the tile's operands start at its split's first k, its K
// is that split's length, and its C is its own partial product (summed after).
template <typename PA, typename PB, typename PP>
inline Tile<PA, PB> locate_tile(
    int block_m, int block_n, uint group, PP params,
    PA a, const constant int* a_shape, const constant int64_t* a_strides,
    PB b, const constant int* b_shape, const constant int64_t* b_strides,
    device float* c) {
  Tile<PA, PB> t;
  t.M = params[P_M];
  t.N = params[P_N];
  t.K = params[P_K];
  const int tiles_n = params[P_TILES_N];
  const int tiles = params[P_TILES_M] * tiles_n;
  const int nd = params[P_BATCH_NDIM];
  const int tile = int(group) % tiles;
  t.row0 = (tile / tiles_n) * block_m;
  t.col0 = (tile % tiles_n) * block_n;

  // Which output matrix: batch entry, and (split-K) which stretch of K, the
  // split being the slowest-varying index (Plan.kernel_out_shape).
  int rest = int(group) / tiles;
  const int64_t matrix = rest;
  int64_t a_off = 0, b_off = 0;
  for (int i = nd - 1; i >= 0; --i) {
    const int extent = params[P_BATCH_SHAPE + i];
    const int idx = rest % extent;
    rest /= extent;
    if (a_shape[i] != 1) a_off += idx * a_strides[i];
    if (b_shape[i] != 1) b_off += idx * b_strides[i];
  }
  const int k_split = params[P_BATCH_SHAPE + nd];  // K itself when K is not split
  const int k0 = rest * k_split;
  t.K = min(t.K - k0, k_split);
  a_off += k0 * a_strides[nd + 1];
  b_off += k0 * b_strides[nd];
  t.A = {a + a_off, a_strides[nd], a_strides[nd + 1], t.M, t.K};
  t.B = {b + b_off, b_strides[nd], b_strides[nd + 1], t.K, t.N};
  t.ldc = t.N;
  t.c_offset = matrix * t.M * t.N;
  t.C = c + t.c_offset;
  return t;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_SCHEDULE_H
