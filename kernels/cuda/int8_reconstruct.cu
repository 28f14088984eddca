#include "sgemm/int8_tiles.cuh"
#include "sgemm/params.cuh"
// Chapter 7, step 3 of the INT8 emulation: C from the s residue products by
// the Chinese remainder theorem, unscaled. For each output, with q_i its
// residue modulo p_i (int8_products.cu) and the constants of
// mlx_sgemm/emulation/moduli.py (CRT: w_i = hi_i + lo_i, P = P_hi + P_lo):
//   X_hi = sum hi_i q_i (exact in float64), X_lo = sum lo_i q_i,
//   Q = rint((X_hi + X_lo) (1/P)), C' = (X_hi - Q P_hi) + (X_lo - Q P_lo),
//   C = C' 2^-(shift of its row of A + shift of its column of B), to float32.
// The float64 operations are written as intrinsics (no fused multiply-adds) in
// the order of mlx_sgemm.emulation.scheme.reconstruct, so the GPU's result is
// the numpy reference's, bit for bit.
// An output the scheme does not give is the float32 fallback's (`direct`,
// kernels/cuda/tile_threads.cu gated by the choice): every output when the
// choice has no moduli, else those whose row of A or column of B holds an Inf
// or NaN (sgemm::NON_FINITE_LINE), so that Inf and NaN land where mx.matmul
// puts them.
//
// One thread, COLUMNS = 8 consecutive outputs of a row: 8 bytes of each
// residue matrix (rows Np bytes apart, Np a multiple of 256).
// a_stats, b_stats: the lines' statistics, for their shifts (sgemm::line_shift).
// choice: the moduli s and bits (int8_choice.cu). constants: for each count of
// moduli 1, 2, .. in turn, the float64 words (low word first) of hi_0..hi_{s-1},
// lo_0..lo_{s-1}, P_hi, P_lo, 1/P: 2s + 3 values, so s's start after (s - 1)(s + 3).
// params: M, N, Np.
constexpr int COLUMNS = 8;
const int M = params[0], N = params[1], Np = params[2];
const int s = choice[sgemm::CHOICE_MODULI], bits = choice[sgemm::CHOICE_BITS];
const int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
const int groups = Np / COLUMNS;
if (id >= static_cast<int64_t>(M) * groups) return;
const int row = static_cast<int>(id / groups), col0 = static_cast<int>(id % groups) * COLUMNS;
if (col0 >= N) return;
float* const c_row = c_out + static_cast<int64_t>(row) * N;
const float* const direct_row = direct + static_cast<int64_t>(row) * N;
if (s == 0) {  // not emulated: the fallback's product
  for (int e = 0; e < COLUMNS && col0 + e < N; ++e) c_row[col0 + e] = direct_row[col0 + e];
  return;
}
const int* const words = constants + 2 * (s - 1) * (s + 3);
auto constant = [&](int i) { return __hiloint2double(words[2 * i + 1], words[2 * i]); };

double x_hi[COLUMNS], x_lo[COLUMNS];
#pragma unroll
for (int e = 0; e < COLUMNS; ++e) x_hi[e] = x_lo[e] = 0.0;
// The residue matrices' 8 bytes loaded GROUP at a time, each group's loads
// issued together so that their latencies overlap instead of adding up (7
// moduli: one group). Groups of 8 keep a thread at 64 registers, so that 4
// blocks (1,024 threads) fit an SM (the spec's min_blocks) and one block's
// loads overlap another's float64 work: H200, 8192^3, 611-640 -> 431-480 us,
// against all (up to 20) moduli's loads at once in 96 registers
// (docs/performance-log.md, "INT8 emulation: the CRT and B's residues").
constexpr int GROUP = 8;
for (int i0 = 0; i0 < s; i0 += GROUP) {
  uint2 loaded[GROUP];
#pragma unroll
  for (int g = 0; g < GROUP; ++g) {
    const int64_t at = (static_cast<int64_t>(i0 + g) * M + row) * Np + col0;
    if (i0 + g < s) loaded[g] = *reinterpret_cast<const uint2*>(residues + at);
  }
#pragma unroll
  for (int g = 0; g < GROUP; ++g) {
    const int i = i0 + g;
    if (i >= s) break;
    const uint2 bytes = loaded[g];
    const double hi = constant(i), lo = constant(s + i);
#pragma unroll
    for (int e = 0; e < COLUMNS; ++e) {
      const uint32_t word = e < 4 ? bytes.x : bytes.y;
      // The byte as a float64 without a conversion instruction: 2^52 + 128 + q
      // has q + 128 in its low bits (exact), then subtract 2^52 + 128.
      const uint32_t biased = ((word >> (8 * (e % 4))) & 0xffu) ^ 0x80u;  // q + 128
      const double q = __dsub_rn(__hiloint2double(0x43300000, biased), 4503599627370624.0);
      // hi q and the sum are exact (CRT's split), so an fma rounds nothing here.
      x_hi[e] = fma(hi, q, x_hi[e]);
      x_lo[e] = __dadd_rn(x_lo[e], __dmul_rn(lo, q));
    }
  }
}
const double p_hi = constant(2 * s), p_lo = constant(2 * s + 1), p_inverse = constant(2 * s + 2);
const int row_shift = sgemm::line_shift(a_stats, M, row, bits);
float out[COLUMNS];
#pragma unroll
for (int e = 0; e < COLUMNS; ++e) {
  const int col = min(col0 + e, N - 1);
  const int col_shift = sgemm::line_shift(b_stats, N, col, bits);
  if (row_shift == sgemm::NON_FINITE_LINE || col_shift == sgemm::NON_FINITE_LINE) {
    out[e] = direct_row[col];
    continue;
  }
  const double quotient = rint(__dmul_rn(__dadd_rn(x_hi[e], x_lo[e]), p_inverse));
  const double c = __dadd_rn(__dsub_rn(x_hi[e], __dmul_rn(quotient, p_hi)),
                             __dsub_rn(x_lo[e], __dmul_rn(quotient, p_lo)));
  // 2^-(row_shift + col_shift) as a float64 built from its exponent where
  // that is a normal number (an exact product), ldexp past that range.
  const int unscale = -(row_shift + col_shift);
  out[e] = __double2float_rn(unscale >= -1022 && unscale <= 1023
                                 ? __dmul_rn(c, __hiloint2double((unscale + 1023) << 20, 0))
                                 : ldexp(c, unscale));
}
if (col0 + COLUMNS <= N && N % 4 == 0) {
  reinterpret_cast<float4*>(c_row + col0)[0] = make_float4(out[0], out[1], out[2], out[3]);
  reinterpret_cast<float4*>(c_row + col0)[1] = make_float4(out[4], out[5], out[6], out[7]);
} else {
#pragma unroll
  for (int e = 0; e < COLUMNS; ++e)
    if (col0 + e < N) c_row[col0 + e] = out[e];
}
