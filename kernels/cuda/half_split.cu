#include "sgemm/int8_tiles.cuh"
// The float16 split (mlx_sgemm/emulation/half_split.py), step 1: one operand's lines (x: lines x K, any
// strides: A's rows, or B^T's rows) scaled each by its own power of two, so
// that its largest magnitude lies in [2^14, 2^15) (sgemm::half_line_shift),
// and split into two float16 parts, big = fp16(x 2^shift) and small =
// fp16(x 2^shift - big) (the difference is exact in float32), written as the
// products kernel copies them:
// tiles of 128-byte rows (64 halves of K) in wgmma's 128-byte swizzle, the
// INT8 residues' layout (sgemm/int8_tiles.cuh) with the parts where the moduli
// are. Zeros fill the padding (lines past `lines`, K past K) and every line
// holding an Inf or NaN.
//
// Block: 64 lines x one k-tile of 64 (512 chunks of 8 k), 256 threads, two
// chunks each, 8 threads a line; where the lines are contiguous (B row-major,
// read as B^T) the block first stages the 64 x 64 values in shared memory.
//
// stats: the lines' statistics (int8_line_stats.cu). params: lines, K, lines
// per tile, tiles, k-tiles (of 64).
constexpr int LINES = 64, K_TILE = sgemm::RESIDUE_K_TILE / 2, CHUNK = 8;
constexpr int CHUNKS = LINES * K_TILE / CHUNK;
const int lines = params[0], K = params[1], per_tile = params[2], tiles = params[3], k_tiles = params[4];
const int64_t line_stride = x_strides[0], k_stride = x_strides[1];
const bool across = line_stride == 1 && k_stride != 1;
const int line0 = blockIdx.x / k_tiles * LINES, k_tile = blockIdx.x % k_tiles;
const int k_base = k_tile * K_TILE;
int8_t* const out = reinterpret_cast<int8_t*>(parts);

__shared__ float staged[K_TILE][LINES + 1];  // [k][line], padded: no bank conflicts
if (across) {
#pragma unroll 8
  for (int i = threadIdx.x; i < K_TILE * LINES; i += blockDim.x) {
    const int k = i / LINES, l = i % LINES;
    const bool in = line0 + l < lines && k_base + k < K;
    staged[k][l] = in ? x[(line0 + l) + static_cast<int64_t>(k_base + k) * k_stride] : 0.0f;
  }
  __syncthreads();
}

for (int j = threadIdx.x; j < CHUNKS; j += blockDim.x) {
  const int l = j / 8, chunk = j % 8;
  const int line = line0 + l, k0 = k_base + CHUNK * chunk;
  const int shift = line < lines ? sgemm::half_line_shift(stats, line) : 0;
  const bool live = line < lines && shift != sgemm::NON_FINITE_LINE;
  float v[CHUNK];
  const float* const row = x + line * line_stride;
  if (!live) {
#pragma unroll
    for (int e = 0; e < CHUNK; ++e) v[e] = 0.0f;
  } else if (across) {
#pragma unroll
    for (int e = 0; e < CHUNK; ++e) v[e] = staged[CHUNK * chunk + e][l];
  } else if (k_stride == 1 && k0 + CHUNK <= K && reinterpret_cast<uintptr_t>(row + k0) % 16 == 0) {
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const float4 f = reinterpret_cast<const float4*>(row + k0)[q];
      v[4 * q] = f.x, v[4 * q + 1] = f.y, v[4 * q + 2] = f.z, v[4 * q + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int e = 0; e < CHUNK; ++e) v[e] = k0 + e < K ? row[(k0 + e) * k_stride] : 0.0f;
  }
  const bool normal_shift = shift >= -126 && shift <= 127;
  const float power = normal_shift ? __int_as_float((shift + 127) << 23) : 1.0f;
  uint32_t big[4], small[4];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const float x0 = normal_shift ? v[2 * w] * power : ldexpf(v[2 * w], shift);
    const float x1 = normal_shift ? v[2 * w + 1] * power : ldexpf(v[2 * w + 1], shift);
    const __half2 hi = __floats2half2_rn(x0, x1);
    big[w] = *reinterpret_cast<const uint32_t*>(&hi);
    const __half2 lo = __floats2half2_rn(x0 - __low2float(hi), x1 - __high2float(hi));
    small[w] = *reinterpret_cast<const uint32_t*>(&lo);
  }
  const int64_t in_tile = sgemm::swizzled_offset(line % per_tile, 16 * chunk);
  *reinterpret_cast<uint4*>(out + sgemm::residue_tile_offset(0, line / per_tile, k_tile, tiles, k_tiles, per_tile) +
                            in_tile) = make_uint4(big[0], big[1], big[2], big[3]);
  *reinterpret_cast<uint4*>(out + sgemm::residue_tile_offset(1, line / per_tile, k_tile, tiles, k_tiles, per_tile) +
                            in_tile) = make_uint4(small[0], small[1], small[2], small[3]);
}
