// TF32 rounding and the 3xTF32 split x = big + small that keeps float32 accuracy on
// the tensor cores: checked (split_tf32, for mma.sync) and fast with a probe (split_tf32_fast).
#ifndef MLX_SGEMM_TF32_CUH
#define MLX_SGEMM_TF32_CUH

namespace sgemm {

// Round to TF32 (10 explicit mantissa bits), to nearest, ties away from zero.
__device__ inline uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small, each exactly a TF32 number (to about 2^-22 relative), so
// a*b ~= a_big*b_big + a_big*b_small + a_small*b_big with float32 accuracy: the
// dropped a_small*b_small term is below float32 rounding.
//
// Non-finite x: big carries the Inf or NaN and small is 0. In the cross terms
// that Inf would meet the other operand's small part, which is exactly 0
// whenever that operand is a TF32 number, and Inf * 0 is NaN where the true
// product is Inf. So the cross terms use `big_finite`, which is 0 for a
// non-finite x: only big*big sees the Inf, as the exact product would.
struct SplitTF32 {
  uint32_t big, small, big_finite;
};

__device__ inline SplitTF32 split_tf32(float x) {
  SplitTF32 s;
  s.big = to_tf32(x);
  const bool finite = isfinite(x);
  if (finite && isinf(__uint_as_float(s.big))) {
    s.big = __float_as_uint(x) & 0xffffe000u;  // rounding overflowed: truncate
  }
  s.small = finite ? to_tf32(x - __uint_as_float(s.big)) : 0u;
  s.big_finite = finite ? s.big : 0u;
  return s;
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
