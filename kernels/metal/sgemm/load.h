// Device-to-threadgroup copies of tiles by all threads, in the order that keeps
// each simdgroup's reads contiguous for either layout.
#ifndef MLX_SGEMM_METAL_LOAD_H
#define MLX_SGEMM_METAL_LOAD_H

#include "operand.h"

namespace sgemm {

// Copy the ROWS x COLS block of x at (r0, c0) into a threadgroup tile (row
// stride LD >= COLS, for padding), zeros outside x. Thread `tid` of `threads`
// copies elements tid, tid + threads, ... of the block, numbered along x's
// contiguous direction: along rows for a row-major x, down columns for a
// column-major one, so a simdgroup reads contiguous runs of device memory
// either way. Other layouts (strided slices, broadcasts) take the row order.
// The tile holds float32, or the operands' own half type (sgemm::TileElement,
// simdgroup.h): x.at widens an element to float32 exactly, so T(...) gives a
// half element back unchanged.
template <int COLS, int ROWS, int LD, typename T, typename P>
inline void load_tile(threadgroup T (&tile)[ROWS][LD], Operand<P> x, int r0, int c0,
                      int tid, int threads) {
  static_assert(COLS <= LD, "a tile row holds COLS elements");
  const bool down = x.column_major();
  for (int e = tid; e < ROWS * COLS; e += threads) {
    const int r = down ? e % ROWS : e / COLS, c = down ? e / ROWS : e % COLS;
    tile[r][c] = T(x.at(r0 + r, c0 + c));
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_LOAD_H
