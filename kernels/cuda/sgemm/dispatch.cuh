// Runtime cases turned into compile-time ones: a main loop compiled once per operand
// layout, flag or row count (with_layouts, with_rows_of_c, ...), so each has just its code.
#ifndef MLX_SGEMM_DISPATCH_CUH
#define MLX_SGEMM_DISPATCH_CUH

#include "operand.cuh"

namespace sgemm {

// How a stage declares its per-layout main loop (a lambda, see with_layouts):
// not inlined. Inlined, the four layout instances share one register
// allocation and ptxas spills heavily; as separate functions each gets its own.
#define SGEMM_MAIN_LOOP __attribute__((noinline))

template <Layout L>
struct LayoutTag {
  static constexpr Layout value = L;
};

// Run f(LayoutTag<layout of x>{}, LayoutTag<layout of y>{}): the kernel's main
// loop is compiled once per layout pair, each instance with just the loads its
// layouts need (one generic instance would need the registers of all of them).
// The price: the out-of-line main loop reads the captured tile through
// memory, which costs the light TF32 loop of tile_async half its speed on an
// H200 (docs/performance-log.md, "Main loops compiled per layout pair").
template <typename TX, typename TY, typename F>
__device__ inline void with_layouts(const Operand<TX>& x, const Operand<TY>& y, F&& f) {
  const bool x_col = x.layout() == COL_MAJOR, y_col = y.layout() == COL_MAJOR;
  if (!x_col && !y_col) f(LayoutTag<ROW_MAJOR>{}, LayoutTag<ROW_MAJOR>{});
  else if (!x_col) f(LayoutTag<ROW_MAJOR>{}, LayoutTag<COL_MAJOR>{});
  else if (!y_col) f(LayoutTag<COL_MAJOR>{}, LayoutTag<ROW_MAJOR>{});
  else f(LayoutTag<COL_MAJOR>{}, LayoutTag<COL_MAJOR>{});
}

// with_layouts for one operand: f(LayoutTag<layout of x>{}).
template <typename T, typename F>
__device__ inline void with_layout(const Operand<T>& x, F&& f) {
  if (x.layout() == COL_MAJOR) f(LayoutTag<COL_MAJOR>{});
  else f(LayoutTag<ROW_MAJOR>{});
}

// A compile-time int as a type (as LayoutTag for layouts): small_m's rows of C.
template <int N>
struct IntTag {
  static constexpr int value = N;
};

// f(IntTag<R>{}) for the least R in 1, 2, 4, ..., MAX_ROWS that holds `rows`
// rows of C (the small-M kernels): each count compiled with just its FMAs.
template <int MAX_ROWS, typename F>
__device__ inline void with_rows_of_c(int rows, F&& f) {
  if (rows == 1 || MAX_ROWS == 1) f(IntTag<1>{});
  else if (rows == 2 || MAX_ROWS == 2) f(IntTag<2>{});
  else if (rows <= 4 || MAX_ROWS == 4) f(IntTag<(MAX_ROWS < 4 ? MAX_ROWS : 4)>{});
  else f(IntTag<MAX_ROWS>{});
}

// One of two types by a compile-time condition (NVRTC has no <type_traits>).
template <bool C, typename T, typename F>
struct Choose {
  using type = T;
};
template <typename T, typename F>
struct Choose<false, T, F> {
  using type = F;
};

}  // namespace sgemm

#endif  // MLX_SGEMM_DISPATCH_CUH
