// The matrix units: a simdgroup's grid of simdgroup_float8x8 accumulators,
// cleared and multiplied over a k-tile in threadgroup memory, and the element
// type of those k-tiles.
#ifndef MLX_SGEMM_METAL_SIMDGROUP_H
#define MLX_SGEMM_METAL_SIMDGROUP_H

#include "operand.h"
#include "params.h"

namespace sgemm {

// The element type of a matrix-unit kernel's k-tiles for operands read through
// pointers PA and PB. Where both are one half type (half, or bfloat), that type,
// as in MLX's steel GEMM: the tiles hold the operands' own values (half the
// bytes of float32 tiles, and simdgroup_async_copy can move them as they are),
// multiplied on simdgroup_matrix<T, 8, 8> into simdgroup_float8x8 accumulators.
// A product of two half (or bfloat) values is exact in float32, so the result
// is float32 accumulation of the exact products, as with float32 tiles.
// Otherwise (float32, or a mixed pair) float32, each element converted on load.
// Whether half tiles are faster on an Apple GPU is not measured (none here).
template <typename A, typename B>
struct SharedHalfType {
  using type = float;
};
template <typename T>
struct SharedHalfType<T, T> {
  using type = T;
};
template <typename PA, typename PB>
using TileElement =
    typename SharedHalfType<typename Operand<PA>::element, typename Operand<PB>::element>::type;

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
// The tiles' element type T (TileElement) is that of the loaded matrices; the
// accumulators are float32 whatever T.
template <int MI, int NI, int BM, int BK, int BN, typename T>
inline void multiply_k_tile(thread simdgroup_float8x8 (&acc)[MI][NI],
                            threadgroup T (&As)[BM][BK], threadgroup T (&Bs)[BK][BN], int sm,
                            int sn) {
  static_assert(BK % 8 == 0, "K advances in 8x8 matrices");
  for (int kk = 0; kk < BK; kk += 8) {
    simdgroup_matrix<T, 8, 8> am[MI], bm[NI];
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

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_SIMDGROUP_H
