// Operand: a matrix as MLX hands it over, read at its own strides (row-major,
// transposed views, slices, broadcasts) and as float32 whatever its element
// type (float, half, bfloat), zeros outside it.
#ifndef MLX_SGEMM_METAL_OPERAND_H
#define MLX_SGEMM_METAL_OPERAND_H

#include "params.h"

namespace sgemm {

// The element type T of an operand pointer, `const device T*` or `const
// constant T*` (declared for decltype only: never called).
template <typename T>
T element_of(const device T*);
template <typename T>
T element_of(const constant T*);

// A rows x cols operand as MLX hands it over: element (r, c) at p[r * rs + c * cs].
// Row-major arrays have cs == 1, transposed views (a.T, swapaxes) rs == 1;
// slices have any strides (negative ones too, x[::-1]), broadcasts a stride of
// 0. P is the pointer type of MLX's signature: `const device T*`, or `const
// constant T*` for an input of fewer than 8 elements, with T the element type
// of the input's dtype (float; float16_t = half and bfloat16_t = bfloat, from
// MLX's Metal prelude). Every read converts its element to float32, exactly
// (every half and bfloat value is a float value), by Metal's implicit widening
// to the float it returns (as MLX's own kernels read bfloat16_t inputs into
// floats, layer_norm.metal): the kernels compute and accumulate in float32
// whatever the operands' type, with no copy of them.
template <typename P>
struct Operand {
  using element = decltype(element_of(P()));

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

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_OPERAND_H
