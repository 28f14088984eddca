// Which block of C a threadgroup computes (Tile, locate_tile): its tile of C, its
// batch entry and stretch of K, and the order the blocks walk the tiles in (GROUP_M).
#ifndef MLX_SGEMM_SCHEDULE_CUH
#define MLX_SGEMM_SCHEDULE_CUH

#include "operand.cuh"
#include "params.cuh"

namespace sgemm {

// One threadgroup's job: one block of C in one batch entry, the operands of that
// batch entry (of element types TA and TB), and where its block of C goes (C is
// row-major, float32 but for the kernels that round to a half type).
template <typename TA = float, typename TB = float, typename TC = float>
struct Tile {
  int M, N, K;
  int row0, col0;  // first row and column of C this block writes
  int k0;          // where its stretch of K starts (split-K); A and B start there already
  Operand<TA> A;   // M x K
  Operand<TB> B;   // K x N
  TC* C;
  int64_t ldc;
};

// The first row and column of tile number `tile` of a tiles_m x tiles_n grid
// of block_m x block_n tiles, walked in the order GROUP_M says (locate_tile).
template <int GROUP_M>
__device__ inline void tile_origin(int tile, int tiles_m, int tiles_n, int block_m, int block_n,
                                   int& row0, int& col0) {
  if (GROUP_M == 1) {
    row0 = (tile / tiles_n) * block_m;
    col0 = (tile % tiles_n) * block_n;
  } else {
    const int band = tile / (GROUP_M * tiles_n);
    const int band_rows = min(GROUP_M, tiles_m - band * GROUP_M);
    const int in_band = tile % (GROUP_M * tiles_n);
    row0 = (band * GROUP_M + in_band % band_rows) * block_m;
    col0 = (in_band / band_rows) * block_n;
  }
}

// Blocks are numbered along the grid's x axis: K split, batch entry, then tile.
// Operands have the output's batch rank (the Python side merges and pads batch
// dims); a batch dim of extent 1 is broadcast, so it adds no offset. With K
// split (Plan.params), the tile's operands start at its split's first k and
// its K is that split's length; its C is its own partial product.
//
// GROUP_M = 1 walks the tiles row by row. GROUP_M > 1 walks them in bands of
// GROUP_M tile rows, column by column inside a band: blocks that run at the same
// time then share GROUP_M row tiles of A and a few column tiles of B instead of
// one row of A and all of B, and far more of what they read is still in L2.
// The element types come from the pointers MLX's signature declares.
//
// `block` is the block's number, blockIdx.x (locate_tile); a persistent block
// that walks several tiles asks for each by the number a block of its own
// would have had (tile_of).
template <int GROUP_M = 1, typename TA, typename TB, typename TC, typename Shape, typename Strides>
__device__ inline Tile<TA, TB, TC> locate_block(
    int block, int block_m, int block_n, const int32_t* params,
    const TA* a, const Shape& a_shape, const Strides& a_strides,
    const TB* b, const Shape& b_shape, const Strides& b_strides,
    TC* c) {
  Tile<TA, TB, TC> t;
  t.M = params[P_M];
  t.N = params[P_N];
  t.K = params[P_K];
  const int tiles_m = params[P_TILES_M], tiles_n = params[P_TILES_N];
  const int tiles = tiles_m * tiles_n;
  const int nd = params[P_BATCH_NDIM];
  tile_origin<GROUP_M>(block % tiles, tiles_m, tiles_n, block_m, block_n, t.row0, t.col0);

  // Which output matrix: batch entry, and (split-K) which stretch of K, the
  // split being the slowest-varying index (Plan.kernel_out_shape).
  int rest = block / tiles;
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
  t.k0 = k0;
  t.K = min(t.K - k0, k_split);
  a_off += k0 * a_strides[nd + 1];
  b_off += k0 * b_strides[nd];
  t.A = {a + a_off, a_strides[nd], a_strides[nd + 1], t.M, t.K};
  t.B = {b + b_off, b_strides[nd], b_strides[nd + 1], t.K, t.N};
  t.ldc = t.N;
  t.C = c + matrix * t.M * t.N;
  return t;
}

template <int GROUP_M = 1, typename TA, typename TB, typename TC, typename Shape, typename Strides>
__device__ inline Tile<TA, TB, TC> locate_tile(
    int block_m, int block_n, const int32_t* params,
    const TA* a, const Shape& a_shape, const Strides& a_strides,
    const TB* b, const Shape& b_shape, const Strides& b_strides,
    TC* c) {
  return locate_block<GROUP_M>(blockIdx.x, block_m, block_n, params, a, a_shape, a_strides, b, b_shape,
                               b_strides, c);
}

// Tile number `tile` of output matrix `matrix` (its batch entry, and with K
// split its stretch of K, the split being the slowest-varying index:
// Plan.kernel_out_shape), for a persistent block.
template <int GROUP_M = 1, typename TA, typename TB, typename TC, typename Shape, typename Strides>
__device__ inline Tile<TA, TB, TC> tile_of(
    int matrix, int tile, int block_m, int block_n, const int32_t* params,
    const TA* a, const Shape& a_shape, const Strides& a_strides,
    const TB* b, const Shape& b_shape, const Strides& b_strides,
    TC* c) {
  return locate_block<GROUP_M>(matrix * params[P_TILES_M] * params[P_TILES_N] + tile, block_m, block_n, params,
                               a, a_shape, a_strides, b, b_shape, b_strides, c);
}

// A layer's operands as it holds them (launcher.layer_call): x at its own
// rank (a_ndim dimensions, the last K; its rows the product of the others,
// each found by its strides) and W (N x K), B = W^T read in place, C of x's
// leading dimensions by N, row after row. Nothing is reshaped or transposed
// before the kernel, so a layer's product is one node of MLX's graph. Block
// `blockIdx.x` takes row blockIdx.x / tiles_n of x, as a 1 x K matrix (row0
// 0, its row of C at C), and its tile of block_n columns.
template <typename TA, typename TB, typename TC, typename Shape, typename Strides>
__device__ inline Tile<TA, TB, TC> locate_layer_row(int block_n, const int32_t* params, const TA* x,
                                                    const Shape& x_shape, const Strides& x_strides, int x_ndim,
                                                    const TB* w, const Strides& w_strides, TC* c) {
  Tile<TA, TB, TC> t;
  t.M = 1;
  t.N = params[P_N];
  t.K = params[P_K];
  const int tiles_n = params[P_TILES_N];
  const int row = blockIdx.x / tiles_n;
  t.row0 = 0;
  t.col0 = (blockIdx.x % tiles_n) * block_n;
  t.k0 = 0;
  int64_t offset = 0;
  for (int i = x_ndim - 2, rest = row; i >= 0; --i) {
    offset += (rest % x_shape[i]) * x_strides[i];
    rest /= x_shape[i];
  }
  t.A = {x + offset, 0, x_strides[x_ndim - 1], 1, t.K};
  t.B = {w, w_strides[1], w_strides[0], t.K, t.N};
  t.ldc = t.N;
  t.C = c + static_cast<int64_t>(row) * t.N;
  return t;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_SCHEDULE_CUH
