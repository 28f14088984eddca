// The matrix units: a simdgroup's grid of simdgroup_float8x8 accumulators,
// cleared and multiplied over a k-tile in threadgroup memory.
#ifndef MLX_SGEMM_METAL_SIMDGROUP_H
#define MLX_SGEMM_METAL_SIMDGROUP_H

#include "params.h"

namespace sgemm {

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

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_SIMDGROUP_H
