#include "sgemm/dispatch.cuh"
#include "sgemm/int8_tiles.cuh"
// Chapter 6, step 1 of the INT8 emulation (Ozaki scheme II): the int8 residues
// of one operand. Each line (a row of A, or a row of B^T, i.e. a column of B)
// is scaled by its own power of two, 2^shift (worked out from the line's
// largest magnitude: mlx_sgemm/emulation/gpu.py), truncated to an integer, and
// reduced modulo each of the s moduli; the residues are written as the
// products kernel copies them, in swizzled tiles of 128-byte rows
// (sgemm/int8_tiles.cuh). Zeros fill the padding (lines past `lines`, K past
// K), and every line that holds an Inf or NaN.
//
// One thread, one 16-byte chunk of residues per modulus: 16 consecutive k of
// one line, read as 4 float4s (consecutive threads read consecutive chunks
// of the line) and written as one 16-byte store per modulus.
//
// params: lines, K, lines per tile, tiles, k-tiles (of 128), s, reduction
// steps (sgemm::symmetric_residue), then the s moduli.
const int lines = params[0], K = params[1], per_tile = params[2], tiles = params[3],
          k_tiles = params[4], s = params[5], steps_needed = params[6];
const int64_t chunks_per_line = static_cast<int64_t>(k_tiles) * 8;
const int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
if (id >= chunks_per_line * tiles * per_tile) return;
const int line = static_cast<int>(id / chunks_per_line), chunk = static_cast<int>(id % chunks_per_line);
const int k0 = chunk * 16;

// The line's 16 values, scaled and truncated (exact in float: see
// sgemm::symmetric_residue), zeros outside the operand.
float v[16];
const int shift = line < lines ? shift_of_line[line] : 0;
const bool live = line < lines && shift != sgemm::NON_FINITE_LINE;
const float* const row = x + static_cast<int64_t>(line) * K;
if (live && k0 + 16 <= K && reinterpret_cast<uintptr_t>(row + k0) % 16 == 0) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float4 f = reinterpret_cast<const float4*>(row + k0)[j];
    v[4 * j] = f.x, v[4 * j + 1] = f.y, v[4 * j + 2] = f.z, v[4 * j + 3] = f.w;
  }
} else {
#pragma unroll
  for (int e = 0; e < 16; ++e) v[e] = live && k0 + e < K ? row[k0 + e] : 0.0f;
}
// x 2^shift: a multiplication by the power of two where 2^shift is a normal
// float (exact; a product that falls below 2^-126 truncates to 0 all the
// same), ldexpf for the rare shifts past that range.
const bool normal_shift = shift >= -126 && shift <= 127;
const float power = normal_shift ? __int_as_float((shift + 127) << 23) : 1.0f;
#pragma unroll
for (int e = 0; e < 16; ++e) v[e] = truncf(normal_shift ? v[e] * power : ldexpf(v[e], shift));

const int64_t in_tile = sgemm::swizzled_offset(line % per_tile, (chunk % 8) * 16);
// steps is 1 for up to 29 bits a side (8 moduli at K = 4096 keep 25): the
// common case gets a loop of its own, with the step count a constant.
auto write_residues = [&](auto steps_constant) {
  constexpr int steps = decltype(steps_constant)::value;
  for (int m = 0; m < s; ++m) {
    const sgemm::Modulus modulus = sgemm::make_modulus(params[7 + m]);
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
    int8_t* const tile = residues + sgemm::residue_tile_offset(m, line / per_tile, chunk / 8, tiles, k_tiles, per_tile);
    *reinterpret_cast<uint4*>(tile + in_tile) = make_uint4(words[0], words[1], words[2], words[3]);
  }
};
if (steps_needed == 1) {
  write_residues(sgemm::IntTag<1>{});
} else {
  write_residues(sgemm::IntTag<2>{});
}
