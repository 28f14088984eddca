#include "sgemm/operand.cuh"
// The K splits' partial products of a split half_wgmma, added in order (the
// same order every run) and rounded once to C's type: one pass where mx.sum
// and a cast took two kernels (each a launch that a product of a few rows
// feels). partials: [splits][count] float32; params: count, splits.
// Four outputs a thread, float4 loads where count is a multiple of 4.
const int64_t count = static_cast<int64_t>(params[0]) * params[1];
const int splits = params[2];
const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * 4;
const bool vector = count % 4 == 0;
for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4; i < count; i += stride) {
  float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int s = 0; s < splits; ++s) {
    const float* p = partials + s * count + i;
    if (vector) {
      const float4 x = *reinterpret_cast<const float4*>(p);
      v[0] += x.x, v[1] += x.y, v[2] += x.z, v[3] += x.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] += i + e < count ? p[e] : 0.0f;
    }
  }
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (i + e < count) c[i + e] = sgemm::Element<TC>::from_float(v[e]);
}
