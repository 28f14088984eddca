#include "sgemm/int8_tiles.cuh"
// Chapter 7, the INT8 emulation's pre-pass: for each line of x (a lines x K
// view, any strides: A's rows, or B^T's rows, i.e. B's columns) its largest
// magnitude (NaN where the line holds a NaN, inf where it holds an inf), the
// sum of its magnitudes, its smallest nonzero magnitude (inf if none), and
// its norm exponent ceil(log2(||line||_2 (1 + 2^-20))) (0 for a line of
// zeros), in one read of x: mlx_sgemm.emulation.scheme.line_extremes. The
// scaling needs the last (each line brought to a 2-norm of at most 2^bits);
// the choice of moduli all four. Squares are summed in float64 (no overflow
// for any float32).
//
// Block: 8 lines, 256 threads. Where a line's entries are contiguous or
// scattered (K-stride 1, or neither stride 1), a warp reads one line; where
// the lines are (line stride 1: B row-major, read as B^T), the 32 threads of
// each line take every 32nd k, and the 8 lines' reads of one k are 32
// contiguous bytes.
const int lines = params[0], K = params[1];
const int64_t line_stride = x_strides[0], k_stride = x_strides[1];
const bool across = line_stride == 1 && k_stride != 1;
const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int line = blockIdx.x * 8 + (across ? threadIdx.x % 8 : warp);
const int part = across ? threadIdx.x / 8 : lane;  // which k this thread starts at, of 32
float top = 0.0f, total = 0.0f, low = __int_as_float(0x7f800000);
double squares = 0.0;
bool nan = false;
auto take = [&](float v) {
  const float m = fabsf(v);
  nan |= m != m;
  top = fmaxf(top, m);
  total += m;
  squares = fma(static_cast<double>(v), static_cast<double>(v), squares);
  if (m > 0.0f) low = fminf(low, m);
};
if (line < lines) {
  const float* const row = x + line * line_stride;
  if (!across && k_stride == 1 && K % 4 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0) {
#pragma unroll 4  // several loads in flight, not one load's latency per step
    for (int k = 4 * part; k < K; k += 128) {
      const float4 v = *reinterpret_cast<const float4*>(row + k);
      take(v.x), take(v.y), take(v.z), take(v.w);
    }
  } else {
#pragma unroll 4
    for (int k = part; k < K; k += 32) take(row[k * k_stride]);
  }
}
// The 32 threads of a line: a warp, or lanes 8 apart in every warp.
__shared__ float top_of[8][8], total_of[8][8], low_of[8][8];
__shared__ double squares_of[8][8];
__shared__ int nan_of[8][8];
for (int offset = 16; offset >= (across ? 8 : 1); offset /= 2) {
  top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
  low = fminf(low, __shfl_xor_sync(0xffffffffu, low, offset));
  total += __shfl_xor_sync(0xffffffffu, total, offset);
  squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  nan |= __shfl_xor_sync(0xffffffffu, static_cast<int>(nan), offset) != 0;
}
if (across) {
  if (lane < 8) {  // lanes 0-7 of each warp hold their warp's part of lines 0-7
    top_of[warp][lane] = top, total_of[warp][lane] = total, low_of[warp][lane] = low;
    squares_of[warp][lane] = squares, nan_of[warp][lane] = nan;
  }
  __syncthreads();
  if (warp != 0 || lane >= 8) return;
  for (int w = 1; w < 8; ++w) {
    top = fmaxf(top, top_of[w][lane]), low = fminf(low, low_of[w][lane]);
    total += total_of[w][lane], squares += squares_of[w][lane], nan |= nan_of[w][lane] != 0;
  }
} else if (lane != 0) {
  return;
}
if (line >= lines) return;
int exponent = 0;
if (squares > 0.0) {
  const double m = frexp(sqrt(squares) * (1.0 + 0x1p-20), &exponent);
  if (m == 0.5) exponent -= 1;  // an exact power of two
}
stats[line] = nan ? __int_as_float(0x7fc00000) : top;
stats[lines + line] = total;
stats[2 * lines + line] = low;
stats[3 * lines + line] = static_cast<float>(exponent);
