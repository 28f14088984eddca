// How the INT8 emulation lays out its int8 residues in device memory: tiles of
// 128-byte rows, already in the 128-byte swizzle wgmma reads, so that one bulk
// copy moves a whole tile into shared memory (kernels/cuda/int8_residues.cu
// writes them, int8_products.cu reads them), and the moduli they are taken by.
#ifndef MLX_SGEMM_INT8_TILES_CUH
#define MLX_SGEMM_INT8_TILES_CUH

#include "batched_loads.cuh"

namespace sgemm {

// A residue matrix of `lines` rows (rows of A, or columns of B: B^T's rows) of
// K int8 each, for s moduli, is stored as
//   [s][lines / LINES][Kp / 128][LINES][128 bytes]
// lines padded to a multiple of LINES (the products' tile: 128 for A, 256 for
// B) and K to Kp, a multiple of 128, with zeros (which add nothing). Tile
// (m, t, kt) is LINES x 128 bytes, contiguous: the products copy k-tile kt of
// tile t with one cp.async.bulk. Inside it, row r is 128 bytes whose 16-byte
// chunk c lies in slot c ^ (r % 8), wgmma's 128-byte swizzle (K-major, 8-row
// atoms of 1024 bytes: the tile must start 1024-byte aligned, which it does
// when the array does, 16 KB and 32 KB being multiples of 1024).
constexpr int RESIDUE_K_TILE = 128;  // bytes of K per tile row
// A line's power-of-two shift when it holds an Inf or NaN: its residues are
// zeros and the outputs it touches are the float32 fallback's
// (int8_reconstruct.cu), so that they are mx.matmul's.
constexpr int NON_FINITE_LINE = -2147483647 - 1;
__device__ inline int swizzled_offset(int r, int k_byte) {
  return r * RESIDUE_K_TILE + (((k_byte / 16) ^ (r % 8)) * 16) + k_byte % 16;
}
__device__ inline int64_t residue_tile_offset(int modulus, int tile, int k_tile, int tiles, int k_tiles,
                                              int lines_per_tile) {
  return ((static_cast<int64_t>(modulus) * tiles + tile) * k_tiles + k_tile) * lines_per_tile *
         RESIDUE_K_TILE;
}

// The emulation's choice for one product, int32 words that int8_choice.cu
// writes on the device and the other kernels read, so that no value of the
// data travels to the host between them (mlx_sgemm.emulation.gpu.Choice reads
// them back when asked): how many moduli (0: the product is not emulated, the
// float32 fallback computes every output), the bits a side, why not (a
// mlx_sgemm.emulation.scheme.Reason), and what the pre-pass found
// (scheme.Assessment's fields; the wide operand 0 for none, 1 for A, 2 for B),
// and whether a line of either operand may hold an Inf or NaN (0: none does,
// so that the fallback's blocks need not look at their lines).
enum ChoiceWord {
  CHOICE_MODULI, CHOICE_BITS, CHOICE_REASON, CHOICE_A_LOST, CHOICE_B_LOST, CHOICE_A_SPAN,
  CHOICE_B_SPAN, CHOICE_WIDE_OPERAND, CHOICE_WIDE_LINE, CHOICE_NON_FINITE, CHOICE_WORDS
};
// The steps sgemm::symmetric_residue takes to reduce a line value below 2^bits.
__device__ inline int residue_steps(int bits) { return bits <= 29 ? 1 : 2; }

// Whether a line holds no Inf or NaN: its largest magnitude, as the
// statistics store it (NaN where it holds a NaN), is finite.
__device__ inline bool largest_is_finite(float largest) { return fabsf(largest) <= 3.4028235e38f; }
__device__ inline bool line_is_finite(const float* stats, int line) { return largest_is_finite(stats[line]); }

// A finite line's lost bits and span from its four statistics (largest
// magnitude, sum, smallest nonzero, norm exponent n; int8_line_stats.cu) at K,
// 0 and 0 for a line of zeros (scheme.line_exponents's rule):
//   lost = n - floor(log2(sum |x| / K))  (how far its mean entry lies below its
//          norm bound),
//   span = n - floor(log2(smallest nonzero |x|))  (the bits that entry needs).
__device__ inline void line_lost_and_span(const float (&read)[4], int K, int& lost, int& span) {
  const float top = read[0], total = read[1], low = read[2];
  const int norm_exp = static_cast<int>(read[3]);
  int e;
  lost = span = 0;
  if (!(top > 0.0f)) return;
  if (total > 0.0f) {
    frexp(static_cast<double>(total) / K, &e);
    lost = max(norm_exp - (e - 1), 0);
  }
  if (low <= 3.4028235e38f) {
    frexp(static_cast<double>(low), &e);
    span = max(norm_exp - (e - 1), 0);
  }
}

// Whether the INT8 emulation's float32 fallback (tile_threads.cu built with
// SGEMM_EMULATION_FALLBACK) computes the rows x cols tile at (row0, col0): the
// choice has no moduli, or a row of A or column of B (B^T's row) of the tile
// holds an Inf or NaN. Every thread of the block calls it (a barrier, but
// where the choice has moduli and no line holds an Inf or NaN: then every
// block of the fallback stops at once, having read one word).
__device__ inline bool fallback_computes_tile(const int* choice, const float* a_stats, int M,
                                              const float* b_stats, int N, int row0, int col0,
                                              int rows, int cols) {
  if (choice[CHOICE_MODULI] != 0 && choice[CHOICE_NON_FINITE] == 0) return false;
  // Lines first .. first + count - 1 of `lines`: is one of them marked? The
  // fallback's blocks read every line of both operands this way, 8 loads in
  // flight a thread.
  auto marked = [](const float* stats, int first, int count, int lines) {
    bool any = false;
    for_each_in_batches<8>(first + threadIdx.x, min(first + count, lines), blockDim.x,
                           [&](int line) { return stats[line]; },
                           [&](float largest, int) { any |= !largest_is_finite(largest); });
    return any;
  };
  const bool non_finite = marked(a_stats, row0, rows, M) | marked(b_stats, col0, cols, N);
  return __syncthreads_or(non_finite) || choice[CHOICE_MODULI] == 0;
}

// The power of two that brings line `line` to a 2-norm of at most 2^bits,
// from its statistics (stats: [4][lines], int8_line_stats.cu: largest
// magnitude, sum, smallest nonzero, norm exponent): bits - norm exponent, or
// NON_FINITE_LINE where the line holds an Inf or NaN (a largest magnitude
// that is not finite). mlx_sgemm.emulation.scheme.line_shifts in numpy.
__device__ inline int line_shift(const float* stats, int lines, int line, int bits) {
  if (!line_is_finite(stats, line)) return NON_FINITE_LINE;
  return bits - static_cast<int>(stats[3 * lines + line]);
}

// The power of two that brings line `line`'s largest magnitude into
// [2^(top-1), 2^top) (the float16 split, half_split.cu: top = 15, below
// float16's largest finite value), or NON_FINITE_LINE; 0 for a line of zeros:
// half_shift_of from its largest magnitude as the statistics store it.
// mlx_sgemm.emulation.half_split.split_lines in numpy.
__device__ inline int half_shift_of(float largest, int top) {
  if (!largest_is_finite(largest)) return NON_FINITE_LINE;
  int e;
  frexpf(largest, &e);  // largest = m 2^e, m in [0.5, 1)
  return largest > 0.0f ? top - e : 0;
}
__device__ inline int half_line_shift(const float* stats, int line, int top) {
  return half_shift_of(stats[line], top);
}

// A residue tile as the wgmma descriptor describes it (sgemm::wgmma_descriptor):
// the 128-byte swizzle along K, 8-row atoms 1024 bytes apart.
struct ResidueTile {
  static constexpr int LBO = 16;        // unused with a swizzle along K (one atom wide)
  static constexpr int SBO = 1024;      // bytes between 8-row atoms
  static constexpr uint64_t LAYOUT = 1; // descriptor layout type: 128-byte swizzle
};

// One modulus as the residue arithmetic uses it: p, 1/p, and the ends of the
// symmetric range int8 holds: [-(p-1)/2, (p-1)/2] for odd p, [-128, 127] for
// 256. Made once per modulus, outside the loops over values.
struct Modulus {
  float p, inverse, high, low;
};
__device__ inline Modulus make_modulus(int p) {
  const float high = p == 256 ? 127.0f : 0.5f * (p - 1);
  return {static_cast<float>(p), 1.0f / static_cast<float>(p), high, p == 256 ? -128.0f : -high};
}

// x mod p in the symmetric range. x is an integer held exactly in a float (a
// float32 scaled by a power of two and truncated keeps at most 24 significant
// bits). A step x - p * rint(x / p) leaves at most p/2 + 2^-23 |x| (the
// quotient's rounding), and is exact (an fma) while that is below 2^24: one
// step serves |x| < 2^29 (it leaves less than p/2 + 64, within one p of the
// range), two |x| < 2^46 (the first leaves less than 2^24); the compares then
// move a remainder one p outside the range back in.
__device__ inline int symmetric_residue(float x, const Modulus& m, int steps) {
  for (int i = 0; i < steps; ++i) x = fmaf(-rintf(x * m.inverse), m.p, x);
  if (x > m.high) x -= m.p;
  if (x < m.low) x += m.p;
  return static_cast<int>(x);
}

// An int32 sum of residue products modulo p, in the symmetric range, in
// integer steps alone (the products' epilogue, int8_products.cu: float
// conversions run at a quarter of the integer rate, and with four a value the
// reduction cost 67 us more of the products' 917 at 4096^3 on an H200). For
// |v| < 2^31 - 255, which int32-exact sums are (K 128^2 < 2^31):
//   w = v + offset, offset the least multiple of p >= 2^31, is in [0, 2^32)
//   and w = v (mod p); q = umulhi(w, magic), magic = floor((2^32 - 1) / p),
//   is floor(w / p) or one less (Barrett), so w - q p is in [0, 2p).
struct IntModulus {
  uint32_t p, magic, offset;
  int high;  // the symmetric range's top: (p - 1) / 2, or 127 for 256
};
__device__ inline IntModulus make_int_modulus(int p) {
  const uint32_t u = static_cast<uint32_t>(p);
  return {u, 0xffffffffu / u, (0x80000000u + u - 1) / u * u, p == 256 ? 127 : (p - 1) / 2};
}
__device__ inline int symmetric_residue_of_sum(int32_t v, const IntModulus& m) {
  const uint32_t w = static_cast<uint32_t>(v) + m.offset;
  uint32_t r = w - __umulhi(w, m.magic) * m.p;
  if (r >= m.p) r -= m.p;
  return static_cast<int>(r) > m.high ? static_cast<int>(r) - static_cast<int>(m.p) : static_cast<int>(r);
}

}  // namespace sgemm

#endif  // MLX_SGEMM_INT8_TILES_CUH
