// One block's share of the float16 split (mlx_sgemm/emulation/half_split.py,
// step 1; the kernel is half_split.cu) of one operand: its lines (x: lines x
// K, any strides: A's rows, or B^T's rows) scaled each by its own power of
// two, so that its largest magnitude lies in [2^(TOP-1), 2^TOP)
// (sgemm::half_shift_of), and rounded to float16: big = fp16(x 2^shift), and
// with PARTS = 2 (float32 accuracy) also small = fp16(x 2^shift - big) (the
// difference is exact in float32); PARTS = 1 is the TF32-accuracy mode's one
// part. Written (out) as the products kernel copies them: tiles of 128-byte
// rows (64 halves of K) in wgmma's 128-byte swizzle, the INT8 residues' layout
// (sgemm/int8_tiles.cuh) with the parts where the moduli are, `tiles` tiles of
// `per_tile` lines by `k_tiles` k-tiles of 64. Zeros fill the padding (lines
// past `lines`, K past K) and every line holding an Inf or NaN. Also written:
// the lines' statistics (stats_out), which the fallback and the products read,
// with a line the split does not take marked (split_stats).
//
// Two ways through, chosen from x's strides where the kernel runs (MLX's
// arrays show the host no strides):
// - Whole lines: where a line's k are contiguous and K <= WHOLE_K, a block
//   copies one line into shared memory (256 threads, up to CHUNKS_A_THREAD
//   chunks of 8 k each), takes its statistics (sgemm::LineStats) and writes
//   its parts: x is read once, and int8_line_stats.cu, given WHOLE_K, left
//   these lines alone.
// - Tiles: otherwise (B row-major, read as B^T, whose lines are its columns;
//   or K past WHOLE_K), the statistics come from int8_line_stats.cu (`stats`,
//   copied to stats_out), and a block covers 64 lines x one k-tile of 64 (512
//   chunks of 8 k, read by sgemm::LineBlock), two chunks a thread. The blocks
//   go from the last lines to the first: the statistics' read of x ended
//   there, so the first blocks find their lines still in L2.
//
// `block`: this block's index among the operand's split_blocks(per_tile,
// tiles, k_tiles), which cover the larger of the two ways' blocks; the other
// blocks stop at once.
#ifndef MLX_SGEMM_HALF_SPLIT_BLOCK_CUH
#define MLX_SGEMM_HALF_SPLIT_BLOCK_CUH

#include "async_copy.cuh"
#include "int8_tiles.cuh"
#include "line_chunks.cuh"
#include "line_stats.cuh"

namespace sgemm {

constexpr int SPLIT_LINES = 64, SPLIT_K_TILE = RESIDUE_K_TILE / 2;  // a tile-way block: 64 lines x 64 k

// Blocks of 256 threads an operand's split takes: a block a line (whole
// lines) or a block per 64 lines of a k-tile (tiles), whichever is more.
__host__ __device__ constexpr int split_blocks(int per_tile, int tiles, int k_tiles) {
  return tiles * per_tile > tiles * per_tile / SPLIT_LINES * k_tiles ? tiles * per_tile
                                                                      : tiles * per_tile / SPLIT_LINES * k_tiles;
}

// A line's four statistics as the split hands them on: a finite line whose
// span is past MAX_SPAN, or whose lost bits are past MAX_SPAN + 1 (an entry,
// or its mean one, would scale below float16's smallest subnormal: the rule
// int8_choice.cu applies with one "modulus" of MAX_SPAN + 1 bits), gets the
// largest magnitude +Inf. The fallback then computes the tiles of its lines
// and the products take its outputs from there, as for a line holding an Inf
// or NaN; every other output stays the split's. (The choice, one kernel and
// one graph node more, sent the whole product to the fallback for one such
// line.)
template <int MAX_SPAN>
__device__ inline void split_stats(float (&line_stats)[4], int K) {
  int lost, span;
  line_lost_and_span(line_stats, K, lost, span);
  if (largest_is_finite(line_stats[0]) && (span > MAX_SPAN || lost > MAX_SPAN + 1))
    line_stats[0] = __int_as_float(0x7f800000);
}

template <int PARTS, int WHOLE_K, int TOP, int MAX_SPAN>
__device__ inline void half_split_block(const float* x, int64_t line_stride, int64_t k_stride, const float* stats,
                                        int8_t* out, float* stats_out, int lines, int K, int per_tile, int tiles,
                                        int k_tiles, int block) {
  static_assert(PARTS == 1 || PARTS == 2, "big, or big and small");
  constexpr int LINES = SPLIT_LINES, K_TILE = SPLIT_K_TILE, CHUNK = 8;
  constexpr int CHUNKS = LINES * K_TILE / CHUNK;
  constexpr int THREADS = 256, CHUNKS_A_THREAD = WHOLE_K / (THREADS * CHUNK);
  static_assert(CHUNKS_A_THREAD * THREADS * CHUNK == WHOLE_K, "whole lines: a block's chunks of 8 k");


  // Chunk `chunk` (of 8 k, counted along the line) of `line`, scaled by 2^shift,
  // as its float16 parts into their tiles: 16 bytes a part; zeros for a line
  // holding an Inf or NaN (shift NON_FINITE_LINE).
  auto write_chunk = [&](float (&v)[CHUNK], int line, int chunk, int shift) {
    if (shift == NON_FINITE_LINE) {
#pragma unroll
      for (int e = 0; e < CHUNK; ++e) v[e] = 0.0f;
      shift = 0;
    }
    scale_by_power_of_two(v, shift);
    uint32_t parts_of[PARTS][4];  // [part][pair of halves]
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const __half2 hi = __floats2half2_rn(v[2 * w], v[2 * w + 1]);
      parts_of[0][w] = *reinterpret_cast<const uint32_t*>(&hi);
      if constexpr (PARTS == 2) {
        const __half2 lo = __floats2half2_rn(v[2 * w] - __low2float(hi), v[2 * w + 1] - __high2float(hi));
        parts_of[PARTS - 1][w] = *reinterpret_cast<const uint32_t*>(&lo);
      }
    }
    const int k_tile = chunk / (K_TILE / CHUNK);
    const int64_t in_tile = swizzled_offset(line % per_tile, 16 * (chunk % (K_TILE / CHUNK)));
#pragma unroll
    for (int part = 0; part < PARTS; ++part) {
      const uint32_t* const w = parts_of[part];
      *reinterpret_cast<uint4*>(out + residue_tile_offset(part, line / per_tile, k_tile, tiles, k_tiles, per_tile) +
                                in_tile) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  };

  // The block's shared memory: its line (whole lines) or its staged tile.
  using Tiles = LineBlock<LINES, K_TILE>;
  constexpr int STAGED_FLOATS = sizeof(Tiles::Staging) / sizeof(float);
  __shared__ __align__(16) float shared_floats[WHOLE_K > STAGED_FLOATS ? WHOLE_K : STAGED_FLOATS];

  if (lines_read_whole(k_stride, K, WHOLE_K)) {
    const int line = block;
    if (line >= tiles * per_tile) return;
    const bool live = line < lines;
    const float* const row = x + static_cast<int64_t>(line) * line_stride;
    const bool aligned = reinterpret_cast<uintptr_t>(row) % 16 == 0;
    const int line_chunks = k_tiles * (K_TILE / CHUNK);
    // Thread t's chunks t, t + 256, ..: copied into shared memory without
    // registers (cp.async: all in flight at once, and the registers stay few,
    // which the tiles' way needs for its occupancy), read back by t alone.
    float* const line_values = shared_floats;
    auto for_each_chunk = [&](auto&& f) {  // f(chunk) for each of this thread's chunks
#pragma unroll
      for (int j = 0; j < CHUNKS_A_THREAD; ++j) {
        const int chunk = threadIdx.x + THREADS * j;
        if (chunk >= line_chunks) break;
        f(chunk);
      }
    };
    for_each_chunk([&](int chunk) {
      const int k0 = CHUNK * chunk;
      if (live && aligned && k0 + CHUNK <= K) {
#pragma unroll
        for (int q = 0; q < CHUNK / 4; ++q) cp_async<16>(line_values + k0 + 4 * q, row + k0 + 4 * q, 16);
      } else {
#pragma unroll
        for (int e = 0; e < CHUNK; ++e) line_values[k0 + e] = live && k0 + e < K ? row[k0 + e] : 0.0f;
      }
    });
    cp_async_commit();
    cp_async_wait<0>();
    LineStats stats_here = LineStats::empty();
    for_each_chunk([&](int chunk) {
      float v[CHUNK];
      load_float4s(v, line_values + CHUNK * chunk);
#pragma unroll
      for (int e = 0; e < CHUNK; ++e) stats_here.take(v[e]);  // the zeros past K change nothing
    });
    // The line's statistics: each warp's, then thread 0 adds the 8 in order.
    __shared__ LineStats of_warp[THREADS / 32];
    __shared__ int shift;
    stats_here.add_lanes(1);
    if (threadIdx.x % 32 == 0) of_warp[threadIdx.x / 32] = stats_here;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < THREADS / 32; ++w) stats_here.add(of_warp[w]);
      shift = live ? half_shift_of(stats_here.largest(), TOP) : NON_FINITE_LINE;
      if (live) {
        float line_stats[4];
        stats_here.values(line_stats);
        split_stats<MAX_SPAN>(line_stats, K);
        store_line_stats(line_stats, stats_out, lines, line);
      }
    }
    __syncthreads();
    for_each_chunk([&](int chunk) {
      float v[CHUNK];
      load_float4s(v, line_values + CHUNK * chunk);
      write_chunk(v, line, chunk, shift);
    });
    return;
  }

  const int tile_blocks = tiles * per_tile / LINES * k_tiles;
  if (block >= tile_blocks) return;
  const int block_index = tile_blocks - 1 - block;  // the last lines first
  const int line0 = block_index / k_tiles * LINES, k_tile = block_index % k_tiles;
  if (k_tile == 0)
    for (int l = line0 + threadIdx.x; l < min(line0 + LINES, lines); l += THREADS) {
      float line_stats[4];
      load_line_stats(stats, lines, l, line_stats);
      split_stats<MAX_SPAN>(line_stats, K);
      store_line_stats(line_stats, stats_out, lines, l);
    }
  const Tiles tile_block(x, lines, K, line_stride, k_stride, line0, k_tile * K_TILE);
  auto& staged = *reinterpret_cast<Tiles::Staging*>(shared_floats);
  tile_block.stage(staged);

  for (int j = threadIdx.x; j < CHUNKS; j += THREADS) {
    const int l = j / 8, chunk = j % 8;
    const int line = line0 + l;
    const int shift = line < lines ? half_line_shift(stats, line, TOP) : 0;
    float v[CHUNK];
    tile_block.load(v, l, chunk, line < lines, staged);
    write_chunk(v, line, k_tile * (K_TILE / CHUNK) + chunk, shift);
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_HALF_SPLIT_BLOCK_CUH
