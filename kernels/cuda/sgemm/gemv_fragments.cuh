// half_gemv's fragments (kernels/cuda/half_gemv.cu): what one lane holds of a
// chunk of B and A for mma.sync m16n8k16, and how an operand that allows no
// vector load fills them element by element.
#ifndef MLX_SGEMM_GEMV_FRAGMENTS_CUH
#define MLX_SGEMM_GEMV_FRAGMENTS_CUH

#include "dispatch.cuh"
#include "operand.cuh"

namespace sgemm {

// Column-major B (k contiguous): 32 k of a chunk. Lane (g, q) holds 8 k from
// k = 8q of the rows g and g + 8 of each of NT 16-column tiles of B^T, and A's
// row g at the same 8 k.
template <int NT>
struct ColFragment {
  uint4 b[NT][2];
  uint4 a;
};

// Row-major B (columns contiguous): 16 k of a chunk. Lane (g, q) holds the
// rows 4q .. 4q + 3 of its run of 2 NT columns (one load each: NT words of
// two halves), and A's row g at those 4 k.
template <int NT>
struct RowFragment {
  using Run = typename Choose<NT == 1, uint32_t, typename Choose<NT == 2, uint2, uint4>::type>::type;
  Run b[4];
  uint2 a;
};

// The bits of element (r, c) of x, zero outside; two of them as one register,
// the first in the low half.
template <typename T>
__device__ inline uint32_t element_bits(const Operand<T>& x, int r, int c) {
  const T v = x.raw_at(r, c);
  return *reinterpret_cast<const unsigned short*>(&v);
}
__device__ inline uint32_t pair_bits(uint32_t lo, uint32_t hi) { return lo | (hi << 16); }

// The element path, out of line (operands by value, so that nothing of the
// caller's fast path lives in memory) and slow: a chunk's fragments with
// every element checked, zeros outside the matrices. a_row: the lane's row of
// A, or -1 for a row past M; k: the lane's first k; n0: the column of C of its
// first fragment row (col0 + g for a ColFragment, col0 + 2 NT g for a RowFragment).
template <int NT, typename T>
__device__ __noinline__ ColFragment<NT> col_fragment_by_elements(const Operand<T> A, const Operand<T> B, int a_row,
                                                                int k, int n0) {
  ColFragment<NT> f;
  auto run = [&](auto element) {
    uint32_t w[4];
    for (int e = 0; e < 4; ++e) w[e] = pair_bits(element(k + 2 * e), element(k + 2 * e + 1));
    return make_uint4(w[0], w[1], w[2], w[3]);
  };
  for (int j = 0; j < NT; ++j)
    for (int h = 0; h < 2; ++h) f.b[j][h] = run([&](int kk) { return element_bits(B, kk, n0 + 16 * j + 8 * h); });
  f.a = run([&](int kk) { return a_row < 0 ? 0u : element_bits(A, a_row, kk); });
  return f;
}

template <int NT, typename T>
__device__ __noinline__ RowFragment<NT> row_fragment_by_elements(const Operand<T> A, const Operand<T> B, int a_row,
                                                                int k, int n0) {
  RowFragment<NT> f;
  for (int r = 0; r < 4; ++r) {
    uint32_t w[NT];
    for (int e = 0; e < NT; ++e) w[e] = pair_bits(element_bits(B, k + r, n0 + 2 * e), element_bits(B, k + r, n0 + 2 * e + 1));
    f.b[r] = *reinterpret_cast<const typename RowFragment<NT>::Run*>(w);
  }
  auto a_bits = [&](int kk) { return a_row < 0 ? 0u : element_bits(A, a_row, kk); };
  f.a = make_uint2(pair_bits(a_bits(k), a_bits(k + 1)), pair_bits(a_bits(k + 2), a_bits(k + 3)));
  return f;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_GEMV_FRAGMENTS_CUH
