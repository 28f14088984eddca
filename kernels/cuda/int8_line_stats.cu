#include "sgemm/int8_tiles.cuh"
#include "sgemm/line_stats.cuh"
// Chapter 7, the INT8 emulation's pre-pass: for each line of x (a lines x K
// view, any strides: A's rows, or B^T's rows, i.e. B's columns) its
// statistics (sgemm::LineStats: largest, total and smallest nonzero magnitude,
// norm exponent) in one read of x: mlx_sgemm.emulation.scheme.line_extremes.
// The scaling needs the last (each line brought to a 2-norm of at most
// 2^bits); the choice of moduli all four.
//
// Block: 8 lines, 256 threads. Where a line's entries are contiguous or
// scattered (K-stride 1, or neither stride 1), a warp reads one line; where
// the lines are (line stride 1: B row-major, read as B^T), the 32 threads of
// each line take every 32nd k, and the 8 lines' reads of one k are 32
// contiguous bytes.
//
// params: lines, K, and the longest contiguous lines left to the reader that
// takes them whole (the float16 split, half_split.cu, computes their
// statistics itself; 0 for none): where x's lines are contiguous and K is at
// most that, the kernel writes nothing.
const int lines = params[0], K = params[1], whole_k = params[2];
const int64_t line_stride = x_strides[0], k_stride = x_strides[1];
if (sgemm::lines_read_whole(k_stride, K, whole_k)) return;
const bool across = line_stride == 1 && k_stride != 1;
const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int line = blockIdx.x * 8 + (across ? threadIdx.x % 8 : warp);
const int part = across ? threadIdx.x / 8 : lane;  // which k this thread starts at, of 32
sgemm::LineStats stats_here = sgemm::LineStats::empty();
if (line < lines) {
  const float* const row = x + line * line_stride;
  if (!across && k_stride == 1 && K % 4 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0) {
#pragma unroll 4  // several loads in flight, not one load's latency per step
    for (int k = 4 * part; k < K; k += 128) {
      const float4 v = *reinterpret_cast<const float4*>(row + k);
      stats_here.take(v.x), stats_here.take(v.y), stats_here.take(v.z), stats_here.take(v.w);
    }
  } else {
#pragma unroll 4
    for (int k = part; k < K; k += 32) stats_here.take(row[k * k_stride]);
  }
}
// The 32 threads of a line: a warp, or lanes 8 apart in every warp.
stats_here.add_lanes(across ? 8 : 1);
if (across) {
  __shared__ sgemm::LineStats of_warp[8][8];
  if (lane < 8) of_warp[warp][lane] = stats_here;  // lanes 0-7 of each warp: their part of lines 0-7
  __syncthreads();
  if (warp != 0 || lane >= 8) return;
  for (int w = 1; w < 8; ++w) stats_here.add(of_warp[w][lane]);
} else if (lane != 0) {
  return;
}
if (line >= lines) return;
stats_here.store(stats, lines, line);
