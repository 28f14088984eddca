// One row of A against B, a warp a column of C at a time (a token's product):
// the column loop over W's rows that half_gemv_one_row and half_gemv's one-row
// way share (one_row_column_sums, one_row_warp_columns), and half_gemv_one_row's
// ways for the layouts of B it is not built for (kernels/cuda/half_gemv_one_row.cu):
// row-major B in runs, and any strides element by element. Those are out of
// line, operands by value: inlined (or as lambdas capturing the kernel's
// locals, which then live in memory) their registers and stack would be the
// column-major way's too, whose bound is 32 registers a thread (64 warps an SM).
#ifndef MLX_SGEMM_GEMV_ONE_ROW_CUH
#define MLX_SGEMM_GEMV_ONE_ROW_CUH

#include "operand.cuh"
#include "streamed_load.cuh"
#include "warp_reduce.cuh"

namespace sgemm {

constexpr int ONE_ROW_RUN = 8;  // halves a 16-byte load

// 8 halves (one 16-byte load) as floats, exactly: every half is a float32 value.
template <typename T>
__device__ inline void halves_to_floats(const uint4& v, float (&f)[ONE_ROW_RUN]) {
  const float4 lo = Element<T>::to_float4(make_uint2(v.x, v.y)), hi = Element<T>::to_float4(make_uint2(v.z, v.w));
  f[0] = lo.x, f[1] = lo.y, f[2] = lo.z, f[3] = lo.w, f[4] = hi.x, f[5] = hi.y, f[6] = hi.z, f[7] = hi.w;
}

// Column-major B (x @ W.T: a column of B, a row of W, is contiguous): this
// lane's share of the dot products of x (a row of A, k contiguous) with COLS
// columns of B, w[c] the first element of column c. The runs of 8 k go to
// PARTS parts, run j to part j / 32 % PARTS; of its part's runs lane l reads
// runs l, l + 32, ..., UNROLL of them a column in flight, and x's run at the
// same k through L1 (every warp of the grid reads it). A warp's load is 512
// contiguous bytes of one column. K past the last whole run goes to part 0,
// element by element. Adds into sum[c] in a fixed order; the caller adds the
// lanes (warp_sum_spread) and the parts.
template <int COLS, int PARTS, int UNROLL, typename T>
__device__ inline void one_row_column_sums(const T* const (&w)[COLS], const T* x, int K, int part,
                                           float (&sum)[COLS]) {
  constexpr int RUN = ONE_ROW_RUN, STEP = 32 * RUN * PARTS;  // k between a lane's runs
  const int lane = threadIdx.x % 32;
  auto add_run = [&](float& s, const uint4& wv, const uint4& xv) {
    float wf[RUN], xf[RUN];
    halves_to_floats<T>(wv, wf);
    halves_to_floats<T>(xv, xf);
#pragma unroll
    for (int e = 0; e < RUN; ++e) s = fmaf(wf[e], xf[e], s);
  };
  auto run_of = [](const T* p) { return *reinterpret_cast<const uint4*>(p); };
  auto x_run = [](const T* p) { return __ldg(reinterpret_cast<const uint4*>(p)); };
  int k = RUN * (lane + 32 * part);
  for (; k + (UNROLL - 1) * STEP + RUN <= K; k += UNROLL * STEP) {
    uint4 wv[UNROLL][COLS], xv[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int c = 0; c < COLS; ++c) wv[u][c] = run_of(w[c] + k + u * STEP);
      xv[u] = x_run(x + k + u * STEP);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int c = 0; c < COLS; ++c) add_run(sum[c], wv[u][c], xv[u]);
  }
  for (; k + RUN <= K; k += STEP) {  // the whole runs left
    const uint4 xv = x_run(x + k);
#pragma unroll
    for (int c = 0; c < COLS; ++c) add_run(sum[c], run_of(w[c] + k), xv);
  }
  if (part == 0)
    for (int kk = K - K % RUN + lane; kk < K; kk += 32)  // K past the last whole run
#pragma unroll
      for (int c = 0; c < COLS; ++c) sum[c] = fmaf(Element<T>::to_float(w[c][kk]), Element<T>::to_float(x[kk]), sum[c]);
}

// Column-major B: COLS whole columns of one row of C (`c_row`) from col0 by
// this warp, x = that row of A (k contiguous, 16-byte aligned, as B's columns),
// GROUP columns at a time with LOADS loads of B in flight a lane. A column past
// N reads column N - 1 (in bounds, never stored). Out of line: inlined into
// half_gemv, its registers spilled the tensor-core way's under that kernel's
// bound.
template <int COLS, int LOADS, typename T, typename TC>
__device__ __noinline__ void one_row_warp_columns(const Operand<T> B, const T* x, int K, int N, int col0,
                                                  TC* c_row) {
  constexpr int GROUP = COLS < 4 ? COLS : 4;
  constexpr int UNROLL = LOADS / GROUP > 0 ? LOADS / GROUP : 1;
  static_assert(COLS % GROUP == 0, "whole groups of columns");
  float sum[COLS] = {};
#pragma unroll
  for (int g = 0; g < COLS; g += GROUP) {
    const T* w[GROUP];
#pragma unroll
    for (int c = 0; c < GROUP; ++c) w[c] = B.p + min(col0 + g + c, N - 1) * B.cs;
    float group_sum[GROUP] = {};
    one_row_column_sums<GROUP, 1, UNROLL>(w, x, K, 0, group_sum);
#pragma unroll
    for (int c = 0; c < GROUP; ++c) sum[g + c] = group_sum[c];
  }
  const float total = warp_sum_spread<COLS>(sum);  // column lane / (32 / COLS)'s
  const int lane = threadIdx.x % 32, n = col0 + lane / (32 / COLS);
  if (lane % (32 / COLS) == 0 && n < N) c_row[n] = Element<TC>::from_float(total);
}

// Row-major B: the block's 32 columns from col0 of one row of C (`c_row`),
// x = that row of A (element k at x[k * x_stride]). Lane (r, q) = (lane / 4,
// lane % 4) of warp w reads the 8 columns col0 + 8 q .. at rows k = 8 (w +
// WARPS i) + r: each row's 64 bytes in one load of 4 lanes, one load in
// flight a lane (two spill under the bound on sm_80). A run past N reads its
// columns inside one by one, zeros beyond. The 8 lanes of a column (q, q + 4,
// ..) add by shuffles, then the warps in order through `warp_sums` (WARPS x
// 32 floats): every thread of the block calls this.
template <int WARPS, typename T, typename TC>
__device__ __noinline__ void one_row_row_major(const Operand<T> B, const T* x, int64_t x_stride, int K, int N,
                                               int col0, TC* c_row, float* warp_sums) {
  constexpr int RUN = ONE_ROW_RUN, BN = 4 * RUN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 4, col = col0 + RUN * (lane % 4);
  const bool whole_run = col + RUN <= N;
  float acc[RUN] = {};
  auto add_row = [&](const uint4& run, float xk) {
    float wf[RUN];
    halves_to_floats<T>(run, wf);
#pragma unroll
    for (int e = 0; e < RUN; ++e) acc[e] = fmaf(wf[e], xk, acc[e]);
  };
  auto run_at = [&](int k) {  // 8 columns of row k of B from col, zero past N
    if (whole_run) return load_streamed<uint4>(B.p + k * B.rs + col);
    T h[RUN];
#pragma unroll
    for (int e = 0; e < RUN; ++e) h[e] = col + e < N ? B.p[k * B.rs + col + e] : Element<T>::zero();
    return *reinterpret_cast<const uint4*>(h);
  };
  constexpr int STEP = 8 * WARPS;  // rows of B a round of the block's loads covers
  for (int k = 8 * warp + r; k < K; k += STEP) add_row(run_at(k), Element<T>::to_float(x[k * x_stride]));
#pragma unroll
  for (int e = 0; e < RUN; ++e)
#pragma unroll
    for (int o = 4; o < 32; o *= 2) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], o);
  if (r == 0)
#pragma unroll
    for (int e = 0; e < RUN; ++e) warp_sums[warp * BN + RUN * lane + e] = acc[e];
  __syncthreads();
  if (threadIdx.x < BN && col0 + threadIdx.x < N) {
    float sum = warp_sums[threadIdx.x];
    for (int v = 1; v < WARPS; ++v) sum += warp_sums[v * BN + threadIdx.x];
    c_row[col0 + threadIdx.x] = Element<TC>::from_float(sum);
  }
}

// Any strides: column n of C (of the row `row` of A) by one warp, element by element.
template <typename T, typename TC>
__device__ __noinline__ void one_row_by_elements(const Operand<T> A, const Operand<T> B, int row, int n, TC* c_row) {
  const int lane = threadIdx.x % 32;
  float sum[1] = {0.0f};
  for (int k = lane; k < A.cols; k += 32) sum[0] = fmaf(B(k, n), A(row, k), sum[0]);
  const float total = warp_sum_spread<1>(sum);
  if (lane == 0) c_row[n] = Element<TC>::from_float(total);
}

}  // namespace sgemm

#endif  // MLX_SGEMM_GEMV_ONE_ROW_CUH
