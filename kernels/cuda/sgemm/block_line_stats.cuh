// One block's share of the emulations' pre-pass (int8_line_stats.cu): the
// statistics (sgemm::LineStats) of some lines of x, a lines x K view with
// any strides (A's rows, or B^T's rows, i.e. B's columns), in one read of x.
//
// Block: 256 threads, block `block` of a grid of line_stats_blocks(lines).
// Where a line's entries are contiguous or scattered (K-stride 1, or neither
// stride 1), 8 lines, a warp a line; where the lines are (line stride 1: B
// row-major, read as B^T), 16 lines, whose values at one k are 64 contiguous
// bytes, the later blocks left idle.
//
// whole_k: the longest contiguous lines left to the reader that takes them
// whole (the float16 split, half_split.cu, computes their statistics itself;
// 0 for none): where x's lines are contiguous and K is at most that, the
// block writes nothing.
#ifndef MLX_SGEMM_BLOCK_LINE_STATS_CUH
#define MLX_SGEMM_BLOCK_LINE_STATS_CUH

#include "line_chunks.cuh"
#include "line_stats.cuh"

namespace sgemm {

// Blocks of 256 threads that cover `lines` lines, 8 a block.
__host__ __device__ constexpr int line_stats_blocks(int lines) { return (lines + 7) / 8; }

__device__ inline void block_line_stats(const float* x, int64_t line_stride, int64_t k_stride, int lines, int K,
                                        int whole_k, float* stats, int block) {
  if (lines_read_whole(k_stride, K, whole_k)) return;
  if (line_stride == 1 && k_stride != 1) {
    // The lines are contiguous (B row-major, read as B^T): ACROSS_LINES lines a
    // block, whose values at one k are one run of 64 bytes; a thread takes 4
    // lines (a float4) at every PHASES-th k. (H200, 4096 x 4096: 24 us; with
    // 32-byte runs of 8 lines read 4 bytes a thread, 32 us; with 128-byte runs
    // of 32 lines, 35 us: too few blocks.)
    constexpr int ACROSS_LINES = 16, RUNS = ACROSS_LINES / 4, PHASES = 256 / RUNS;
    static_assert(RUNS * 4 == ACROSS_LINES && RUNS <= 32 && 32 % RUNS == 0, "float4 runs, whole in a warp");
    const int line0 = block * ACROSS_LINES;
    if (line0 >= lines) return;
    const int run = threadIdx.x % RUNS, phase = threadIdx.x / RUNS;
    LineStats of_line[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) of_line[e] = LineStats::empty();
    const float* const first = x + line0 + 4 * run;
    if (runs_across_are_float4s(x, line0, ACROSS_LINES, lines, k_stride)) {
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
    __shared__ LineStats of_warp[8][ACROSS_LINES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      of_line[e].add_lanes(RUNS);
      if (lane < RUNS) of_warp[warp][4 * lane + e] = of_line[e];
    }
    __syncthreads();
    const int line = line0 + threadIdx.x;
    if (threadIdx.x >= ACROSS_LINES || line >= lines) return;
    LineStats total = of_warp[0][threadIdx.x];
    for (int w = 1; w < 8; ++w) total.add(of_warp[w][threadIdx.x]);
    total.store(stats, lines, line);
    return;
  }
  // Otherwise 8 lines a block, a warp a line.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int line = block * 8 + warp;
  LineStats stats_here = LineStats::empty();
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
}

}  // namespace sgemm

#endif  // MLX_SGEMM_BLOCK_LINE_STATS_CUH
