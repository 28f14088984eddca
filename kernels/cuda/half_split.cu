#include "sgemm/int8_tiles.cuh"
#include "sgemm/line_chunks.cuh"
// The float16 split (mlx_sgemm/emulation/half_split.py), step 1: one operand's lines (x: lines x K, any
// strides: A's rows, or B^T's rows) scaled each by its own power of two, so
// that its largest magnitude lies in [2^(TOP-1), 2^TOP) (sgemm::half_line_shift),
// and rounded to float16: big = fp16(x 2^shift), and with PARTS = 2 (float32
// accuracy) also small = fp16(x 2^shift - big) (the difference is exact in
// float32); PARTS = 1 is the TF32-accuracy mode's one part. Written as the
// products kernel copies them:
// tiles of 128-byte rows (64 halves of K) in wgmma's 128-byte swizzle, the
// INT8 residues' layout (sgemm/int8_tiles.cuh) with the parts where the moduli
// are. Zeros fill the padding (lines past `lines`, K past K) and every line
// holding an Inf or NaN.
//
// Block: 64 lines x one k-tile of 64 (512 chunks of 8 k, read by
// sgemm::LineBlock), 256 threads, two chunks each, 8 threads a line.
//
// stats: the lines' statistics (int8_line_stats.cu). params: lines, K, lines
// per tile, tiles, k-tiles (of 64).
static_assert(PARTS == 1 || PARTS == 2, "big, or big and small");
constexpr int LINES = 64, K_TILE = sgemm::RESIDUE_K_TILE / 2, CHUNK = 8;
constexpr int CHUNKS = LINES * K_TILE / CHUNK;
const int lines = params[0], K = params[1], per_tile = params[2], tiles = params[3], k_tiles = params[4];
const int line0 = blockIdx.x / k_tiles * LINES, k_tile = blockIdx.x % k_tiles;
const sgemm::LineBlock<LINES, K_TILE> block(x, lines, K, x_strides[0], x_strides[1], line0, k_tile * K_TILE);
__shared__ decltype(block)::Staging staged;
block.stage(staged);
int8_t* const out = reinterpret_cast<int8_t*>(parts);

for (int j = threadIdx.x; j < CHUNKS; j += blockDim.x) {
  const int l = j / 8, chunk = j % 8;
  const int line = line0 + l;
  const int shift = line < lines ? sgemm::half_line_shift(stats, line, TOP) : 0;
  float v[CHUNK];
  block.load(v, l, chunk, line < lines && shift != sgemm::NON_FINITE_LINE, staged);
  sgemm::scale_by_power_of_two(v, shift);
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
  const int64_t in_tile = sgemm::swizzled_offset(line % per_tile, 16 * chunk);
#pragma unroll
  for (int part = 0; part < PARTS; ++part) {
    const uint32_t* const w = parts_of[part];
    *reinterpret_cast<uint4*>(out + sgemm::residue_tile_offset(part, line / per_tile, k_tile, tiles, k_tiles,
                                                                per_tile) + in_tile) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}
