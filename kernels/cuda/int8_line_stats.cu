#include "sgemm/int8_tiles.cuh"
#include "sgemm/line_chunks.cuh"
#include "sgemm/line_stats.cuh"
// Chapter 7, the INT8 emulation's pre-pass: for each line of x (a lines x K
// view, any strides: A's rows, or B^T's rows, i.e. B's columns) its
// statistics (sgemm::LineStats: largest, total and smallest nonzero magnitude,
// norm exponent) in one read of x: mlx_sgemm.emulation.scheme.line_extremes.
// The scaling needs the last (each line brought to a 2-norm of at most
// 2^bits); the choice of moduli all four.
//
// Block: 256 threads. Where a line's entries are contiguous or scattered
// (K-stride 1, or neither stride 1), 8 lines, a warp a line; where the lines
// are (line stride 1: B row-major, read as B^T), 16 lines, whose values at
// one k are 64 contiguous bytes, the grid's later blocks left idle.
//
// params: lines, K, and the longest contiguous lines left to the reader that
// takes them whole (the float16 split, half_split.cu, computes their
// statistics itself; 0 for none): where x's lines are contiguous and K is at
// most that, the kernel writes nothing.
const int lines = params[0], K = params[1], whole_k = params[2];
const int64_t line_stride = x_strides[0], k_stride = x_strides[1];
if (sgemm::lines_read_whole(k_stride, K, whole_k)) return;
if (line_stride == 1 && k_stride != 1) {
  // The lines are contiguous (B row-major, read as B^T): ACROSS_LINES lines a
  // block, whose values at one k are one run of 64 bytes; a thread takes 4
  // lines (a float4) at every PHASES-th k. (H200, 4096 x 4096: 24 us; with
  // 32-byte runs of 8 lines read 4 bytes a thread, 32 us; with 128-byte runs
  // of 32 lines, 35 us: too few blocks.)
  constexpr int ACROSS_LINES = 16, RUNS = ACROSS_LINES / 4, PHASES = 256 / RUNS;
  static_assert(RUNS * 4 == ACROSS_LINES && RUNS <= 32 && 32 % RUNS == 0, "float4 runs, whole in a warp");
  const int line0 = blockIdx.x * ACROSS_LINES;
  if (line0 >= lines) return;
  const int run = threadIdx.x % RUNS, phase = threadIdx.x / RUNS;
  sgemm::LineStats of_line[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) of_line[e] = sgemm::LineStats::empty();
  const float* const first = x + line0 + 4 * run;
  if (sgemm::runs_across_are_float4s(x, line0, ACROSS_LINES, lines, k_stride)) {
#pragma unroll 8  // several loads in flight
    for (int k = phase; k < K; k += PHASES) {
      const float4 v = *reinterpret_cast<const float4*>(first + static_cast<int64_t>(k) * k_stride);
      of_line[0].take(v.x), of_line[1].take(v.y), of_line[2].take(v.z), of_line[3].take(v.w);
    }
  } else {
#pragma unroll 4
    for (int k = phase; k < K; k += PHASES)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (line0 + 4 * run + e < lines) of_line[e].take(first[static_cast<int64_t>(k) * k_stride + e]);
  }
  // The PHASES threads of a run: lanes RUNS apart in each warp, then the warps.
  __shared__ sgemm::LineStats of_warp[8][ACROSS_LINES];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    of_line[e].add_lanes(RUNS);
    if (lane < RUNS) of_warp[warp][4 * lane + e] = of_line[e];
  }
  __syncthreads();
  const int line = line0 + threadIdx.x;
  if (threadIdx.x >= ACROSS_LINES || line >= lines) return;
  sgemm::LineStats total = of_warp[0][threadIdx.x];
  for (int w = 1; w < 8; ++w) total.add(of_warp[w][threadIdx.x]);
  total.store(stats, lines, line);
  return;
}
// Otherwise 8 lines a block, a warp a line.
const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int line = blockIdx.x * 8 + warp;
sgemm::LineStats stats_here = sgemm::LineStats::empty();
if (line < lines) {
  const float* const row = x + line * line_stride;
  if (k_stride == 1 && K % 4 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0) {
#pragma unroll 4  // several loads in flight, not one load's latency per step
    for (int k = 4 * lane; k < K; k += 128) {
      const float4 v = *reinterpret_cast<const float4*>(row + k);
      stats_here.take(v.x), stats_here.take(v.y), stats_here.take(v.z), stats_here.take(v.w);
    }
  } else {
#pragma unroll 4
    for (int k = lane; k < K; k += 32) stats_here.take(row[k * k_stride]);
  }
}
stats_here.add_lanes(1);
if (lane != 0 || line >= lines) return;
stats_here.store(stats, lines, line);
