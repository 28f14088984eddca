// Loops whose loads are all in flight before the first of them is used. In a
// loop of one load an iteration whose trip count is not known when it is
// compiled, each iteration checks its bound before its load, and ptxas does not
// move a load above that branch, however far the loop is unrolled: each
// iteration waits a load's whole latency (docs/performance-log.md, "The
// split's phases: loads in flight").
#ifndef MLX_SGEMM_BATCHED_LOADS_CUH
#define MLX_SGEMM_BATCHED_LOADS_CUH

namespace sgemm {

// Visits i = begin, begin + step, .. (below end) in order, BATCH at a time:
// load(i) for the whole batch first (an i past the end is taken as the last
// one visited, whose value is then not used), then use(value, i) for those
// below the end.
template <int BATCH, typename Load, typename Use>
__device__ inline void for_each_in_batches(int begin, int end, int step, const Load& load, const Use& use) {
  using Value = decltype(load(begin));
  const int last = begin + (end - 1 - begin) / step * step;
  for (int i0 = begin; i0 < end; i0 += BATCH * step) {
    Value v[BATCH];
#pragma unroll
    for (int u = 0; u < BATCH; ++u) v[u] = load(min(i0 + u * step, last));
#pragma unroll
    for (int u = 0; u < BATCH; ++u)
      if (i0 + u * step < end) use(v[u], i0 + u * step);
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_BATCHED_LOADS_CUH
