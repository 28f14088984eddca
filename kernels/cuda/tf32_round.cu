#include "sgemm/tf32.cuh"
// x rounded to nearest TF32 (ties away from zero: cvt.rna.tf32.f32), element
// by element, into y: tile_wgmma's A at TF32, which its tensor cores read from
// shared memory and would otherwise truncate (cuBLAS's TF32 rounds to
// nearest), for the instances that copy A by the TMA (the others round A's
// tiles in shared memory: KernelSpec.rounds_a_to_tf32). x is row-contiguous
// (MLX copies a view first); params: its count as rows, columns (it may pass
// 2^31). Four elements a thread, float4s where the count is a multiple of 4.
const int64_t count = static_cast<int64_t>(params[0]) * params[1];
const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * 4;
const bool vector = count % 4 == 0;
auto round = [](float v) { return __uint_as_float(sgemm::to_tf32(v)); };
for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4; i < count; i += stride) {
  if (vector) {
    *reinterpret_cast<float4*>(y + i) = sgemm::to_tf32_4(*reinterpret_cast<const float4*>(x + i));
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (i + e < count) y[i + e] = round(x[i + e]);
  }
}
