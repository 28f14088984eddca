// TF32 rounding and the 3xTF32 split x = big + small that keeps float32 accuracy on
// the tensor cores (split_tf32_fast: no checks, a probe that turns NaN on Inf or NaN).
#ifndef MLX_SGEMM_TF32_CUH
#define MLX_SGEMM_TF32_CUH

namespace sgemm {

// Round to TF32 (10 explicit mantissa bits), to nearest, ties away from zero.
__device__ inline uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// to_tf32 of 4 values (a float4 of a tile), as floats.
__device__ inline float4 to_tf32_4(float4 x) {
  return make_float4(__uint_as_float(to_tf32(x.x)), __uint_as_float(to_tf32(x.y)), __uint_as_float(to_tf32(x.z)),
                     __uint_as_float(to_tf32(x.w)));
}

// The 3xTF32 split for operands on their way to the tensor cores: big = x
// rounded to TF32 and small = x - big rounded to TF32, both to nearest (ties
// away), so |small| <= 2^-11 |x| and the dropped small * small term stays
// below float32's rounding. Integer arithmetic on the bits, no checks: a
// non-finite x, or a big that rounds up to Inf, makes `probe` NaN (Inf * 0),
// and the caller then recomputes what they touch exactly.
__device__ inline float tf32_rounded(float x) {
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}
__device__ inline void split_tf32_fast(float x, float& big, float& small, float& probe) {
  big = tf32_rounded(x);
  small = tf32_rounded(x - big);
  probe = fmaf(big, 0.0f, probe);
}

// split_tf32_fast of 4 values at once (a float4 of a tile).
__device__ inline void split_tf32_fast4(float4 x, float4& big, float4& small, float& probe) {
  split_tf32_fast(x.x, big.x, small.x, probe);
  split_tf32_fast(x.y, big.y, small.y, probe);
  split_tf32_fast(x.z, big.z, small.z, probe);
  split_tf32_fast(x.w, big.w, small.w, probe);
}

}  // namespace sgemm

#endif  // MLX_SGEMM_TF32_CUH
