#include "sgemm/dispatch.cuh"
#include "sgemm/int8_tiles.cuh"
#include "sgemm/line_chunks.cuh"
// Chapter 7, step 1 of the INT8 emulation (Ozaki scheme II): the int8 residues
// of one operand. x is a lines x K view with any strides: A's rows, or B^T's
// rows (B's columns, B^T read in place). Each line is scaled by its own power
// of two, 2^shift (from its 2-norm: sgemm::line_shift), truncated to
// an integer, and reduced modulo each of the s moduli; the residues are
// written as the products kernel copies them, in swizzled tiles of 128-byte
// rows (sgemm/int8_tiles.cuh). Zeros fill the padding (lines past `lines`, K
// past K) and every line that holds an Inf or NaN.
//
// Block: 64 lines x one k-tile of 128 (512 chunks of 16 k, read by
// sgemm::LineBlock), 256 threads, two chunks each. Where a line's k are
// contiguous, a thread reads its chunks' 16 values as float4s, 8 threads a
// line; where the lines are (B row-major, read as B^T), the block first stages
// the 128 x 64 values in shared memory, each k's 64 lines read as 256
// contiguous bytes.
//
// stats: the lines' statistics (int8_line_stats.cu), from which each line's
// shift (sgemm::line_shift). choice: the moduli and bits (int8_choice.cu; no
// moduli: nothing to write). params: lines, K, lines per tile, tiles, k-tiles
// (of 128), then the moduli.
constexpr int LINES = 64, CHUNKS = LINES * sgemm::RESIDUE_K_TILE / 16;
const int lines = params[0], K = params[1], per_tile = params[2], tiles = params[3], k_tiles = params[4];
const int s = choice[sgemm::CHOICE_MODULI], bits = choice[sgemm::CHOICE_BITS];
if (s == 0) return;
const int line0 = blockIdx.x / k_tiles * LINES, k_tile = blockIdx.x % k_tiles;
const sgemm::LineBlock<LINES, sgemm::RESIDUE_K_TILE> block(x, lines, K, x_strides[0], x_strides[1], line0,
                                                           k_tile * sgemm::RESIDUE_K_TILE);
__shared__ decltype(block)::Staging staged;
block.stage(staged);

// Chunk j of the block: line j / 8, chunk j % 8: 8 threads read a line's 16
// values each and write its 128-byte row, so a warp's stores are whole rows.
// (Staged, the 8 threads' reads of shared memory meet in 8 banks, 4 ways;
// threads a line apart, conflict-free, each wrote 16 bytes of a different row
// instead: 20% slower on an H200, docs/performance-log.md, "INT8 emulation:
// the CRT and B's residues".)
for (int j = threadIdx.x; j < CHUNKS; j += blockDim.x) {
  const int l = j / 8, chunk = j % 8;
  const int line = line0 + l;
  const int shift = line < lines ? sgemm::line_shift(stats, lines, line, bits) : 0;
  float v[16];
  block.load(v, l, chunk, line < lines && shift != sgemm::NON_FINITE_LINE, staged);
  // Scaled exactly (a product below 2^-126 truncates to 0 all the same), then
  // truncated to an integer.
  sgemm::scale_by_power_of_two(v, shift);
#pragma unroll
  for (int e = 0; e < 16; ++e) v[e] = truncf(v[e]);

  const int64_t in_tile = sgemm::swizzled_offset(line % per_tile, 16 * chunk);
  // steps is 1 up to 29 bits a side (7 moduli keep 27): the common case gets
  // a loop of its own, with the step count a constant.
  auto write_residues = [&](auto steps_constant) {
    constexpr int steps = decltype(steps_constant)::value;
    for (int m = 0; m < s; ++m) {
      const sgemm::Modulus modulus = sgemm::make_modulus(params[5 + m]);
      uint32_t words[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        uint32_t word = 0;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = sgemm::symmetric_residue(v[4 * w + e], modulus, steps);
          word |= (static_cast<uint32_t>(r) & 0xffu) << (8 * e);
        }
        words[w] = word;
      }
      int8_t* const tile = residues + sgemm::residue_tile_offset(m, line / per_tile, k_tile, tiles, k_tiles, per_tile);
      *reinterpret_cast<uint4*>(tile + in_tile) = make_uint4(words[0], words[1], words[2], words[3]);
    }
  };
  if (sgemm::residue_steps(bits) == 1) {
    write_residues(sgemm::IntTag<1>{});
  } else {
    write_residues(sgemm::IntTag<2>{});
  }
}
