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
// parameters (the alpha/beta kernel also takes c_in after b, and scalars after
// params). An input of fewer than 8 elements arrives in the `constant` address
// space instead of `device` (a 1x1 operand, say), so everything that reads an
// operand is a template on the pointer type.
//
// MLX hands a and b over as they are, without copies (ensure_row_contiguous is
// off): a transposed view, a slice or a broadcast arrives with its own strides,
// which the kernels read from a_strides / b_strides (see Operand). Only the
// output c is always row-contiguous.
//
// A spec's `defines` come before this header (mlx_sgemm/specs.py):
//   SGEMM_ASYNC_COPY  declare simdgroup_async_copy (tile_async, gemm);
//   SGEMM_ALPHA_BETA  the body reads c_in and scalars (gemm).
#ifndef MLX_SGEMM_METAL_H
#define MLX_SGEMM_METAL_H

#include <metal_stdlib>

using namespace metal;

#ifdef SGEMM_ASYNC_COPY
// The undocumented AIR intrinsics behind simdgroup_async_copy, declared as seed
// 002 does (at namespace scope: MLX puts the body inside the kernel). Only the
// stages that use them declare them: Apple's compiler may refuse __asm names
// (reported for macOS 26), and the other stages must not depend on that.
//
// (sizeof(T), alignof(T), dst, dst_elements_per_row, 1, dst_tile (cols, rows),
//  src, src_elements_per_row, 1, src_tile (cols, rows), long2(0), clamp_mode):
// the src tile is copied to the top left of the dst tile, and the rest of the
// dst tile is filled with zeros (clamp_mode 0). The copy is a collective of the
// calling simdgroup and is complete once the simdgroup has waited on its event.
struct _simdgroup_event_t;
thread _simdgroup_event_t* __metal_simdgroup_async_copy_2d(
    ulong, ulong, threadgroup void*, ulong, ulong, ulong2,
    const device void*, ulong, ulong, ulong2, long2, int)
    __asm("air.simdgroup_async_copy_2d.p3i8.p1i8");
void __metal_wait_simdgroup_events(int, thread _simdgroup_event_t**)
    __asm("air.wait_simdgroup_events");
#endif

namespace sgemm {

// Layout of `params` (written by mlx_sgemm/problem.py, Plan.params).
enum Param { P_M, P_N, P_K, P_TILES_M, P_TILES_N, P_BATCH_NDIM, P_BATCH_SHAPE };

// A rows x cols operand as MLX hands it over: element (r, c) at p[r * rs + c * cs].
// Row-major arrays have cs == 1, transposed views (a.T, swapaxes) rs == 1;
// slices have any strides (negative ones too, x[::-1]), broadcasts a stride of
// 0. P is `const device float*` or `const constant float*`.
template <typename P>
struct Operand {
  P p;
  int64_t rs, cs;
  int rows, cols;

  float operator()(int r, int c) const { return p[r * rs + c * cs]; }

  // Element (r, c), or 0 outside the matrix: tiles that overhang the edge read
  // zeros, which add nothing to a dot product.
  float at(int r, int c) const { return (r < rows && c < cols) ? (*this)(r, c) : 0.0f; }

  // Stored column by column (a transposed view): neighbouring threads should
  // then take neighbouring rows, so that a simdgroup reads a contiguous run.
  bool column_major() const { return rs == 1 && cs != 1; }
};

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

// Copy the ROWS x COLS block of x at (r0, c0) into a threadgroup tile (row
// stride LD >= COLS, for padding), zeros outside x. Thread `tid` of `threads`
// copies elements tid, tid + threads, ... of the block, numbered along x's
// contiguous direction: along rows for a row-major x, down columns for a
// column-major one, so a simdgroup reads contiguous runs of device memory
// either way. Other layouts (strided slices, broadcasts) take the row order.
template <int COLS, int ROWS, int LD, typename P>
inline void load_tile(threadgroup float (&tile)[ROWS][LD], Operand<P> x, int r0, int c0,
                      int tid, int threads) {
  static_assert(COLS <= LD, "a tile row holds COLS elements");
  const bool down = x.column_major();
  for (int e = tid; e < ROWS * COLS; e += threads) {
    const int r = down ? e % ROWS : e / COLS, c = down ? e / ROWS : e % COLS;
    tile[r][c] = x.at(r0 + r, c0 + c);
  }
}

// Store v at (r, c) unless that lies outside the rows x cols matrix.
inline void store_clipped(device float* p, int64_t ld, int r, int c, int rows, int cols,
                          float v) {
  if (r < rows && c < cols) p[r * ld + c] = v;
}

// ---- simdgroup matrices ----------------------------------------------------------

template <int MI, int NI>
inline void clear(thread simdgroup_float8x8 (&acc)[MI][NI]) {
  for (int i = 0; i < MI; ++i) {
    for (int j = 0; j < NI; ++j) {
      acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
}

// acc += As * Bs over one k-tile in threadgroup memory, for the simdgroup whose
// (8 MI) x (8 NI) square of the block starts at row sm, column sn: per 8 steps
// of k, MI matrices of A and NI of B are loaded and each is used NI (MI) times.
template <int MI, int NI, int BM, int BK, int BN>
inline void multiply_k_tile(thread simdgroup_float8x8 (&acc)[MI][NI],
                            threadgroup float (&As)[BM][BK], threadgroup float (&Bs)[BK][BN],
                            int sm, int sn) {
  static_assert(BK % 8 == 0, "K advances in 8x8 matrices");
  for (int kk = 0; kk < BK; kk += 8) {
    simdgroup_float8x8 am[MI], bm[NI];
    for (int i = 0; i < MI; ++i) {
      simdgroup_load(am[i], &As[0][0], BK, ulong2(kk, sm + 8 * i));
    }
    for (int j = 0; j < NI; ++j) {
      simdgroup_load(bm[j], &Bs[0][0], BN, ulong2(sn + 8 * j, kk));
    }
    for (int i = 0; i < MI; ++i) {
      for (int j = 0; j < NI; ++j) {
        simdgroup_multiply_accumulate(acc[i][j], am[i], bm[j], acc[i][j]);
      }
    }
  }
}

// ---- storing to C -----------------------------------------------------------------

// What becomes of an accumulator element v on its way to C[i]: C = A B ...
struct PlainStore {
  static constexpr bool direct = true;  // v itself: simdgroup_store may write it
  float operator()(float v, int64_t) const { return v; }
};

// ... or C = alpha A B + beta C_in, C_in row-major like C (i indexes both). With
// beta == 0, C_in is not read (it may hold NaN, as BLAS allows).
template <typename PC>
struct AlphaBetaStore {
  static constexpr bool direct = false;
  PC c_in;
  float alpha, beta;
  float operator()(float v, int64_t i) const {
    return beta != 0.0f ? fma(beta, c_in[i], alpha * v) : alpha * v;
  }
};

// Store the 8x8 accumulator m at (row, col) of the rows x cols row-major C,
// dropping what falls outside it. Every lane of the simdgroup calls this with
// the same arguments, `lane` aside. A whole 8x8 block of plain products goes
// straight to C with simdgroup_store; otherwise the block is stored to `stage`
// (this simdgroup's own 8x8 of threadgroup memory), from where each lane writes
// its elements that lie inside C.
template <typename E>
inline void store_8x8(simdgroup_float8x8 m, threadgroup float (&stage)[8][8], device float* C,
                      int64_t ldc, int row, int col, int rows, int cols, int lane, E epilogue) {
  if (row >= rows || col >= cols) return;  // the whole block is outside C
  if (E::direct && row + 8 <= rows && col + 8 <= cols) {
    simdgroup_store(m, C + row * ldc + col, ldc);
    return;
  }
  simdgroup_store(m, &stage[0][0], 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);  // the other lanes' elements are in stage
  for (int e = lane; e < 64; e += 32) {
    const int r = row + e / 8, c = col + e % 8;
    if (r < rows && c < cols) C[r * ldc + c] = epilogue(stage[e / 8][e % 8], r * ldc + c);
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);  // all read before stage is reused
}

// Store a simdgroup's MI x NI accumulators, the (8 MI) x (8 NI) square of the
// block at row sm, column sn, into C (with store_8x8).
template <int MI, int NI, typename PA, typename PB, typename E>
inline void store_accumulators(thread simdgroup_float8x8 (&acc)[MI][NI],
                               threadgroup float (&stage)[8][8], const thread Tile<PA, PB>& t,
                               int sm, int sn, int lane, E epilogue) {
  for (int i = 0; i < MI; ++i) {
    for (int j = 0; j < NI; ++j) {
      store_8x8(acc[i][j], stage, t.C, t.ldc, t.row0 + sm + 8 * i, t.col0 + sn + 8 * j, t.M,
                t.N, lane, epilogue);
    }
  }
}

#ifdef SGEMM_ASYNC_COPY
// ---- simdgroup_async_copy ---------------------------------------------------------

// Can x be fetched with one 2-D async copy? It needs rows of contiguous
// elements (cs == 1) in device memory, one after another at a positive row
// stride; we also ask for rows that start 16 bytes apart (rs % 4 == 0). Other
// operands are copied element by element (copy_tile).
template <typename P>
inline bool async_copyable(Operand<P>) {
  return false;  // `constant` memory: the copy reads device memory only
}
inline bool async_copyable(Operand<const device float*> x) {
  return x.cs == 1 && x.rs >= x.cols && x.rs % 4 == 0;
}

// Fill a threadgroup tile with the ROWS x COLS block of x at (r0, c0), zeros
// outside x. With `async` (async_copyable(x), the same in all threads)
// simdgroup 0 issues one async copy and stores its event at *event (seed 002:
// one simdgroup loading is faster than all of them); the copy is complete
// once simdgroup 0 has waited on it. Otherwise all threads copy elements
// (load_tile) before returning. Returns the number of events issued (0 or 1).
template <int COLS, int ROWS, int LD>
inline int copy_tile(threadgroup float (&tile)[ROWS][LD], Operand<const device float*> x,
                     int r0, int c0, bool async, thread _simdgroup_event_t** event, int sg,
                     int tid, int threads) {
  if (!async) {
    load_tile<COLS>(tile, x, r0, c0, tid, threads);
    return 0;
  }
  if (sg == 0) {
    const int rows = min(ROWS, x.rows - r0), cols = min(COLS, x.cols - c0);
    *event = __metal_simdgroup_async_copy_2d(
        sizeof(float), alignof(float), (threadgroup void*)&tile[0][0], ulong(LD), 1,
        ulong2(COLS, ROWS), (const device void*)(x.p + r0 * x.rs + c0), ulong(x.rs), 1,
        ulong2(cols, rows), long2(0), 0);
  }
  return 1;
}
template <int COLS, int ROWS, int LD>
inline int copy_tile(threadgroup float (&tile)[ROWS][LD], Operand<const constant float*> x,
                     int r0, int c0, bool, thread _simdgroup_event_t**, int, int tid,
                     int threads) {
  load_tile<COLS>(tile, x, r0, c0, tid, threads);
  return 0;
}
#endif  // SGEMM_ASYNC_COPY

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_H
