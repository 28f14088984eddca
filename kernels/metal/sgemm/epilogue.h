// Storing to C: clipped element stores, 8x8 accumulator stores through a
// simdgroup's staging tile, and the epilogues (plain, or alpha A B + beta C_in).
#ifndef MLX_SGEMM_METAL_EPILOGUE_H
#define MLX_SGEMM_METAL_EPILOGUE_H

#include "schedule.h"

namespace sgemm {

// Store v at (r, c) unless that lies outside the rows x cols matrix.
inline void store_clipped(device float* p, int64_t ld, int r, int c, int rows, int cols,
                          float v) {
  if (r < rows && c < cols) p[r * ld + c] = v;
}

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

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_EPILOGUE_H
