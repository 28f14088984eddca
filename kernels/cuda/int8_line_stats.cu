#include "sgemm/warp_reduce.cuh"
// Chapter 6, the INT8 emulation's pre-pass: for each line (row of x, lines x
// K, rows K apart) its largest magnitude (NaN where the line holds a NaN, inf
// where it holds an inf), the sum of its magnitudes, and its smallest nonzero
// magnitude (inf if none), in one read of x. The scaling needs the first
// (mlx_sgemm/emulation/gpu.py, line_shifts); the choice of moduli all three
// (mlx_sgemm.emulation.scheme.line_exponents). One warp a line, float4 loads
// where the row allows them.
const int lines = params[0], K = params[1];
const int line = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
if (line >= lines) return;
const float* const row = x + static_cast<int64_t>(line) * K;
float top = 0.0f, total = 0.0f, low = __int_as_float(0x7f800000);
bool nan = false;
auto take = [&](float v) {
  const float m = fabsf(v);
  nan |= m != m;
  top = fmaxf(top, m);
  total += m;
  if (m > 0.0f) low = fminf(low, m);
};
const bool vector = K % 4 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0;
if (vector) {
  for (int k = 4 * lane; k < K; k += 128) {
    const float4 v = *reinterpret_cast<const float4*>(row + k);
    take(v.x), take(v.y), take(v.z), take(v.w);
  }
} else {
  for (int k = lane; k < K; k += 32) take(row[k]);
}
for (int offset = 16; offset >= 1; offset /= 2) {
  top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
  low = fminf(low, __shfl_xor_sync(0xffffffffu, low, offset));
  nan |= __shfl_xor_sync(0xffffffffu, static_cast<int>(nan), offset) != 0;
}
float sum_of[1] = {total};
total = sgemm::warp_sum_spread<1>(sum_of);
if (lane == 0) {
  stats[line] = nan ? __int_as_float(0x7fc00000) : top;
  stats[lines + line] = total;
  stats[2 * lines + line] = low;
}
