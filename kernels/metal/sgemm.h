// mlx-sgemm: the pieces every Metal stage shares. Handed to mx.fast.metal_kernel
// as `header=`; MLX writes the kernel signature around each stage's body:
//
//   [[kernel]] void custom_kernel_sgemm_<stage>(
//       const device float* a, const constant int* a_shape,
//       const constant int64_t* a_strides,
//       const device float* b, const constant int* b_shape,
//       const constant int64_t* b_strides,
//       const device int32_t* params, device float* c,
//       <the thread-position attributes the body names>)
//
// with the stage's template constants (TILE, TILE_K, ...) as template
// parameters. An input of fewer than 8 elements arrives in the `constant`
// address space instead of `device` (a 1x1 operand, say), so everything that
// reads an operand is a template on the pointer type.
#ifndef MLX_SGEMM_METAL_H
#define MLX_SGEMM_METAL_H

#include <metal_stdlib>

using namespace metal;

namespace sgemm {

// Layout of `params` (written by mlx_sgemm/problem.py, Plan.params).
enum Param { P_M, P_N, P_K, P_TILES_M, P_TILES_N, P_BATCH_NDIM, P_BATCH_SHAPE };

// One threadgroup's job: one block of C in one batch entry, and where that batch
// entry's matrices live. Matrices are row-major with row strides lda/ldb/ldc.
// PA and PB are `const device float*` or `const constant float*`.
template <typename PA, typename PB>
struct Tile {
  int M, N, K;
  int row0, col0;  // first row and column of C this block writes
  PA A;
  int64_t lda;
  PB B;
  int64_t ldb;
  device float* C;
  int64_t ldc;
};

// Threadgroups are numbered along the grid's x axis: batch entry, then tile
// row, then tile column (`group` is threadgroup_position_in_grid.x). Operands
// have the output's batch rank (the Python side merges and pads batch dims); a
// batch dim of extent 1 is broadcast, so it adds no offset.
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

  int rest = int(group) / tiles;
  const int64_t batch = rest;
  int64_t a_off = 0, b_off = 0;
  for (int i = nd - 1; i >= 0; --i) {
    const int extent = params[P_BATCH_SHAPE + i];
    const int idx = rest % extent;
    rest /= extent;
    if (a_shape[i] != 1) a_off += idx * a_strides[i];
    if (b_shape[i] != 1) b_off += idx * b_strides[i];
  }
  t.lda = a_strides[nd];
  t.ldb = b_strides[nd];
  t.ldc = t.N;
  t.A = a + a_off;
  t.B = b + b_off;
  t.C = c + batch * t.M * t.N;
  return t;
}

// Element (r, c) of a rows x cols row-major matrix, or 0 outside it: tiles that
// overhang the matrix edge read zeros, which add nothing to a dot product.
template <typename P>
inline float load_or_zero(P p, int64_t ld, int r, int c, int rows, int cols) {
  return (r < rows && c < cols) ? p[r * ld + c] : 0.0f;
}

// Copy the ROWS x COLS block of a matrix at (row0, col0) into a threadgroup
// tile (row stride LD >= COLS, for padding), zeros outside the rows x cols
// matrix. Thread `tid` of `threads` copies elements tid, tid + threads, ...:
// consecutive threads take consecutive elements of a row, so a simdgroup reads
// contiguous runs of device memory.
template <int COLS, int ROWS, int LD, typename P>
inline void load_tile(threadgroup float (&tile)[ROWS][LD], P p, int64_t ld, int row0, int col0,
                      int rows, int cols, int tid, int threads) {
  static_assert(COLS <= LD, "a tile row holds COLS elements");
  for (int e = tid; e < ROWS * COLS; e += threads) {
    const int r = e / COLS, c = e % COLS;
    tile[r][c] = load_or_zero(p, ld, row0 + r, col0 + c, rows, cols);
  }
}

// Store v at (r, c) unless that lies outside the rows x cols matrix.
inline void store_clipped(device float* p, int64_t ld, int r, int c, int rows, int cols,
                          float v) {
  if (r < rows && c < cols) p[r * ld + c] = v;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_H
