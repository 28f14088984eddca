// Sums across the 32 lanes of a warp by shuffles: warp_sum_spread adds V values at
// once, each lane ending with one of the V totals (the small-M kernels' last step).
#ifndef MLX_SGEMM_WARP_REDUCE_CUH
#define MLX_SGEMM_WARP_REDUCE_CUH

namespace sgemm {

// One halving step of warp_sum_spread on v[0 .. N): the N / 2 values kept
// land in v[0 .. N / 2). A compile-time recursion, so that every index is a
// constant: as a loop over N, nvcc left the inner loop rolled and v in local
// memory (a stack frame in small_m and small_m_wide).
template <int N, int V>
__device__ inline void warp_halve(float (&v)[V], int offset) {
  if constexpr (N > 1) {
    const bool upper = threadIdx.x & offset;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const float send = upper ? v[i] : v[i + N / 2];
      const float keep = upper ? v[i + N / 2] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, offset);
    }
    warp_halve<N / 2>(v, offset / 2);
  }
}

// Sum V values (a power of 2 up to 32) over the 32 lanes of a warp, in 31
// shuffles for V = 32 rather than V * 5: each halving step keeps one half of
// the values and trades the other half with the partner lane. Returns the total
// of v[lane / (32 / V)] (V = 32: lane i holds the sum of v[i]); v is clobbered.
template <int V>
__device__ inline float warp_sum_spread(float (&v)[V]) {
  static_assert(V >= 1 && V <= 32 && (V & (V - 1)) == 0, "V a power of 2, at most 32");
  warp_halve<V>(v, 16);
  float sum = v[0];
#pragma unroll
  for (int offset = 16 / V; offset >= 1; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  return sum;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_WARP_REDUCE_CUH
