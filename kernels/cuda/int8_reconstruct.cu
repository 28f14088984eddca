#include "sgemm/int8_tiles.cuh"
// Chapter 6, step 3 of the INT8 emulation: C from the s residue products by
// the Chinese remainder theorem, unscaled. For each output, with q_i its
// residue modulo p_i (int8_products.cu) and the constants of
// mlx_sgemm/emulation/moduli.py (CRT: w_i = hi_i + lo_i, P = P_hi + P_lo):
//   X_hi = sum hi_i q_i (exact in float64), X_lo = sum lo_i q_i,
//   Q = rint((X_hi + X_lo) / P), C' = (X_hi - Q P_hi) + (X_lo - Q P_lo),
//   C = C' 2^-(shift of its row of A + shift of its column of B), to float32.
// The float64 operations are written as intrinsics (no fused multiply-adds) in
// the order of mlx_sgemm.emulation.scheme.reconstruct, so the GPU's result is
// the numpy reference's, bit for bit.
// An output whose row of A or column of B holds an Inf or NaN
// (sgemm::NON_FINITE_LINE) is recomputed as a float32 dot product of a and
// bt, so that Inf and NaN land where mx.matmul puts them.
//
// One thread, 4 consecutive outputs of a row (4 bytes of each residue matrix,
// rows Np bytes apart).
// params: M, N, Np, K, s. constants: the float64 words (low word first) of
// hi_0..hi_{s-1}, lo_0..lo_{s-1}, P_hi, P_lo, P.
const int M = params[0], N = params[1], Np = params[2], K = params[3], s = params[4];
const int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
const int quads = Np / 4;
if (id >= static_cast<int64_t>(M) * quads) return;
const int row = static_cast<int>(id / quads), col0 = static_cast<int>(id % quads) * 4;
if (col0 >= N) return;
auto constant = [&](int i) { return __hiloint2double(constants[2 * i + 1], constants[2 * i]); };

double x_hi[4] = {0.0, 0.0, 0.0, 0.0}, x_lo[4] = {0.0, 0.0, 0.0, 0.0};
for (int i = 0; i < s; ++i) {
  const char4 q = *reinterpret_cast<const char4*>(residues + (static_cast<int64_t>(i) * M + row) * Np + col0);
  const double hi = constant(i), lo = constant(s + i);
  const double qs[4] = {double(q.x), double(q.y), double(q.z), double(q.w)};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    x_hi[e] = __dadd_rn(x_hi[e], __dmul_rn(hi, qs[e]));
    x_lo[e] = __dadd_rn(x_lo[e], __dmul_rn(lo, qs[e]));
  }
}
const double p_hi = constant(2 * s), p_lo = constant(2 * s + 1), p = constant(2 * s + 2);
const int row_shift = a_shift[row];
float out[4];
#pragma unroll
for (int e = 0; e < 4; ++e) {
  const int col = min(col0 + e, N - 1);
  const int col_shift = b_shift[col];
  if (row_shift == sgemm::NON_FINITE_LINE || col_shift == sgemm::NON_FINITE_LINE) {
    float v = 0.0f;
    for (int k = 0; k < K; ++k) v = fmaf(a[static_cast<int64_t>(row) * K + k], bt[static_cast<int64_t>(col) * K + k], v);
    out[e] = v;
    continue;
  }
  const double quotient = rint(__ddiv_rn(__dadd_rn(x_hi[e], x_lo[e]), p));
  const double c = __dadd_rn(__dsub_rn(x_hi[e], __dmul_rn(quotient, p_hi)),
                             __dsub_rn(x_lo[e], __dmul_rn(quotient, p_lo)));
  out[e] = __double2float_rn(ldexp(c, -(row_shift + col_shift)));
}
float* const c_row = c_out + static_cast<int64_t>(row) * N;
if (col0 + 4 <= N && N % 4 == 0) {
  *reinterpret_cast<float4*>(c_row + col0) = make_float4(out[0], out[1], out[2], out[3]);
} else {
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (col0 + e < N) c_row[col0 + e] = out[e];
}
