#include "sgemm/dispatch.cuh"
#include "sgemm/epilogue.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/params.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/warp_reduce.cuh"
// small_m_wide: C = A @ B for few rows of A (M <= 4 per block) against a B of
// thousands of columns (a token against a weight matrix), in plain FP32 FMAs,
// B loaded straight into registers, converted to float32 there.
//
// Like small_m (small_m.cu), the product is bound by reading B once. small_m
// stages B through shared memory in strips of 32 columns (a warp reads 128
// bytes of a row of a row-major B), which keeps many blocks busy even at
// N = 1024. Where N is wide enough for blocks of 128 columns to fill the GPU
// (mlx_sgemm/dispatch/kernel_choice.py, WIDE_N), the plainest way reads B faster: every warp reading
// 512 contiguous bytes per load, straight into registers, several loads in
// flight, no shared memory and no barrier until the end. (ncu, 4x14336x4096:
// 57 us on an H200 against cuBLAS's 90; docs/performance-log.md,
// "small_m_wide against cuBLAS, kernel for kernel".)
//
// A block owns BLOCK_M = 4 rows of C and BN = 128 columns; WARPS warps. How the
// warps split that work follows B's layout:
// - row-major (x @ W): a warp's lanes take a run of 4 of the block's 128
//   columns each, and the warps take turns down K in chunks of 4 rows (warp w:
//   chunks w, w + WARPS, ...), CHUNKS chunks' loads in flight at a time. The
//   warps' partial sums meet in shared memory at the end.
// - column-major (x @ W.T, nn.Linear's layout): a warp takes 16 columns and
//   reads them all at once, its lanes along K in runs of 4 (512 contiguous
//   bytes of each float32 column per load: 16 loads in flight a lane). One
//   transposing warp reduction per 32 sums (sgemm::warp_sum_spread) ends it.
// A's rows are read through L1 at every step (a few KB, the same for every
// block). Operands that cannot be read in aligned runs (other strides, an
// unaligned start, a last partial chunk or column group) take the same loops
// through Operand::load4, which reads element by element and puts zeros
// outside the matrix.
//
// Element types: A and B may be float32, float16 or bfloat16 (TA, TB). A run
// of 4 is one load (16 bytes of float32, 8 of halves) and becomes float32 in
// registers (sgemm::Element) before its FMAs. A row-major B of halves keeps
// twice as many chunks in flight (CHUNKS): the same registers and the same
// bytes in flight as float32.
//
// Template constants (mlx_sgemm/build/specs.py, cuda_small_m_wide): WARPS
// (threads = 32 WARPS = the spec's threadgroup), U (row-major: chunks of
// float32 in flight), TA and TB (the operands' element types).
constexpr int BLOCK_M = 4;   // rows of C per block (= the spec's block_m)
constexpr int BN = 128;      // columns of C per block (= the spec's block_n)
constexpr int THREADS = 32 * WARPS;
constexpr int COLS = BN / WARPS;  // column-major: a warp's columns
static_assert(COLS * WARPS == BN && COLS <= 32, "column-major: whole column groups per warp");
constexpr int CHUNKS = U * 4 / sizeof(TB);  // row-major: chunks in flight
using VA = sgemm::Operand<TA>::Vec4;        // a run of 4 of A / of B, as in memory
using VB = sgemm::Operand<TB>::Vec4;

// The warps' partial sums (row-major), or the block's results (column-major).
__shared__ float4 sums[WARPS][BLOCK_M][BN / 4];

const auto t = sgemm::locate_tile(  // C: float32, or the operands' half type
    BLOCK_M, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);

// The grid and thread count come from the spec; one that disagrees with this
// template gets NaN, not a partly written C.
if (blockDim.x != THREADS || params[sgemm::P_TILES_N] != (t.N + BN - 1) / BN) {
  sgemm::write_nan_tile<BLOCK_M, BN>(t);
  return;
}

const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int K = t.K;
const int rows = min(BLOCK_M, t.M - t.row0);
const sgemm::Operand<TA> A = t.A;
const sgemm::Operand<TB> B = t.B;
const bool a_vector = A.vectorizes<sgemm::ROW_MAJOR>();
// A's rows; a row past M repeats the last one (in bounds; never stored).
auto a_row = [&](int r) { return A.p + min(t.row0 + r, t.M - 1) * A.rs; };

auto row_major = [&](auto rows_of_c) {
  constexpr int ROWS = decltype(rows_of_c)::value;
  const int col = t.col0 + 4 * lane;
  const bool b_vector = B.vectorizes<sgemm::ROW_MAJOR>();
  float4 acc[ROWS] = {};
  // Chunk q: rows 4q .. 4q + 3 of B at this lane's 4 columns (w), times A's
  // k = 4q .. 4q + 3 (x).
  auto multiply = [&](const float4 (&x)[ROWS], const float4 (&w)[4]) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const float xs[4] = {x[r].x, x[r].y, x[r].z, x[r].w};
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        acc[r].x += xs[v] * w[v].x;
        acc[r].y += xs[v] * w[v].y;
        acc[r].z += xs[v] * w[v].z;
        acc[r].w += xs[v] * w[v].w;
      }
    }
  };
  int q = warp;
  if (a_vector && b_vector && col + 3 < t.N) {
    // Whole chunks, aligned: one load a run, CHUNKS chunks' loads issued before
    // their FMAs.
    const TB* const b_col = B.p + col;
    const int whole = K / 4;
    for (; q + WARPS * (CHUNKS - 1) < whole; q += WARPS * CHUNKS) {
      VB w[CHUNKS][4];
#pragma unroll
      for (int u = 0; u < CHUNKS; ++u)
#pragma unroll
        for (int v = 0; v < 4; ++v)  // streamed: read once, kept out of L1's way
          w[u][v] = __ldcs(reinterpret_cast<const VB*>(b_col + (4 * (q + WARPS * u) + v) * B.rs));
#pragma unroll
      for (int u = 0; u < CHUNKS; ++u) {
        float4 x[ROWS], wf[4];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
          x[r] = sgemm::Element<TA>::to_float4(__ldg(reinterpret_cast<const VA*>(a_row(r) + 4 * (q + WARPS * u))));
#pragma unroll
        for (int v = 0; v < 4; ++v) wf[v] = sgemm::Element<TB>::to_float4(w[u][v]);
        multiply(x, wf);
      }
    }
  }
  for (; 4 * q < K; q += WARPS) {  // the rest (or all, for other layouts): checked loads
    float4 w[4], x[ROWS];
#pragma unroll
    for (int v = 0; v < 4; ++v) w[v] = B.load4<sgemm::ROW_MAJOR>(4 * q + v, col, b_vector);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) x[r] = A.load4<sgemm::ROW_MAJOR>(t.row0 + r, 4 * q, a_vector);
    multiply(x, w);
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) sums[warp][r][lane] = acc[r];
};

auto col_major = [&](auto rows_of_c) {
  constexpr int ROWS = decltype(rows_of_c)::value;
  constexpr int SUMS = ROWS * COLS;
  // Sum i = COLS r + j (row r, column j) is acc[i / V][i % V]: groups of at
  // most 32, what one warp_sum_spread takes.
  constexpr int V = SUMS < 32 ? SUMS : 32;
  auto sum_of = [&](float (&acc)[SUMS / V][V], int i) -> float& { return acc[i / V][i % V]; };
  const int n0 = t.col0 + COLS * warp;
  const bool b_vector = B.vectorizes<sgemm::COL_MAJOR>();
  float acc[SUMS / V][V];
#pragma unroll  // (an "= {}" here was a zeroing loop through local memory)
  for (int i = 0; i < SUMS; ++i) sum_of(acc, i) = 0.0f;
  auto multiply = [&](const float4& x, const float4& w, float& s) {
    s += x.x * w.x;
    s += x.y * w.y;
    s += x.z * w.z;
    s += x.w * w.w;
  };
  int k = 4 * lane;
  if (a_vector && b_vector) {
    // Columns past N repeat column N - 1 (in bounds; never stored).
    const TB* col_p[COLS];
#pragma unroll
    for (int j = 0; j < COLS; ++j) col_p[j] = B.p + min(n0 + j, t.N - 1) * B.cs;
    for (; k + 3 < K; k += 128) {
      VB w[COLS];
#pragma unroll
      for (int j = 0; j < COLS; ++j) w[j] = __ldcs(reinterpret_cast<const VB*>(col_p[j] + k));
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const float4 x = sgemm::Element<TA>::to_float4(__ldg(reinterpret_cast<const VA*>(a_row(r) + k)));
#pragma unroll
        for (int j = 0; j < COLS; ++j)
          multiply(x, sgemm::Element<TB>::to_float4(w[j]), sum_of(acc, COLS * r + j));
      }
    }
  }
  for (; k < K; k += 128) {  // the rest (or all, for other layouts): checked loads
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const float4 x = A.load4<sgemm::ROW_MAJOR>(t.row0 + r, k, a_vector);
#pragma unroll
      for (int j = 0; j < COLS; ++j)
        multiply(x, B.load4<sgemm::COL_MAJOR>(k, n0 + j, b_vector), sum_of(acc, COLS * r + j));
    }
  }
  // Lanes i * 32 / V .. of each group end with its sum i (sgemm::warp_sum_spread).
  float* const out = reinterpret_cast<float*>(sums[0]);  // [BLOCK_M][BN]
#pragma unroll
  for (int h = 0; h < SUMS / V; ++h) {
    const float sum = sgemm::warp_sum_spread(acc[h]);
    const int i = h * V + lane / (32 / V);
    if (lane % (32 / V) == 0) out[(i / COLS) * BN + COLS * warp + i % COLS] = sum;
  }
};

const bool b_col_major = t.B.layout() == sgemm::COL_MAJOR;
sgemm::with_rows_of_c<BLOCK_M>(rows, [&](auto rows_of_c) {
  if (b_col_major) col_major(rows_of_c);
  else row_major(rows_of_c);
});

// The block's results: row-major, the warps' partial sums added in order
// (column-major: the block's results, in the first slot).
__syncthreads();
sgemm::store_slot_sums<BLOCK_M, BN, THREADS>(t, reinterpret_cast<const float*>(sums),
                                             b_col_major ? 1 : WARPS, rows);
