#include "sgemm/async_copy.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/epilogue.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/params.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/warp_reduce.cuh"
// small_m: C = A @ B when A has few rows (M <= 8: a token's activations against
// a weight matrix), in plain FP32 FMAs.
//
// Why a kernel of its own: with 8 rows of A every element of B is used 8 times,
// so the product is bound by reading B (K x N elements) once from device memory,
// not by arithmetic. A block owns BLOCK_M = 8 rows of C and a strip of BN
// columns over all of K, and everything serves one goal: keep enough bytes of
// B in flight on every SM, all the time, to run at memory bandwidth. (Any M is
// correct: larger M takes several row tiles, each reading B again.)
//
// The block walks K in windows of WK = 16 THREADS / BN: a window of B's strip
// is 16 elements a thread (4 runs of 4), of A 8 rows x WK. A ring of RING
// windows in shared memory is filled by cp.async, RING - 1 windows ahead of
// the one the threads compute on, with one barrier per window:
// - B's runs go to slots private to the thread that copied them (it alone
//   reads them back), so the copies in flight are bounded by shared memory,
//   not registers.
// - A's window is copied once for the block and read by every thread from
//   shared memory. A is small, but every block reads all of it: left to L1 /
//   L2 at the point of use, its latency lands on every step.
// Copies inside the matrices (all but the last window, and the strip's edge)
// are plain cp.async of a run of 4 from addresses worked out once; the others
// go through sgemm::cp_async_vec4, which does the bounds and strides (a partial
// copy at an edge, element copies for strides that allow no whole runs, zeros
// outside the matrix), so the arithmetic is the same for every shape. Only the
// rows C has (1, 2, 4 or 8: rows_of_c) are multiplied: a token's product (M = 1)
// issues an eighth of the FMAs.
//
// B's layout decides which runs of 4 a thread takes:
// - row-major (x @ W): a row of B is contiguous. BN/4 threads each take a run of 4
//   of the strip's columns; the other threads split the window's rows among
//   themselves, 4 consecutive rows each (k-groups). Their partial sums meet by
//   shuffles inside a warp, then in one shared-memory slot per warp.
// - column-major (x @ W.T, B a transposed view: nn.Linear's layout): a column of
//   B is contiguous. A warp takes 4 columns, its lanes a run of 4 of K each (a
//   warp reads 512 contiguous bytes of a float32 column; with more warps than column
//   groups, PARTS warps share a group, each a part of the window). Every lane
//   then holds rows x 4 partial dot products, which one transposing warp
//   reduction (sgemm::warp_sum_spread) turns into one result per lane (or per
//   8 / rows lanes).
//
// Element types: A and B may be float32, float16 or bfloat16 (TA, TB). The
// copies move them as they are in memory, runs of 4 elements (16 bytes of
// float32, 8 of halves) into the ring, and the FMAs read them from there as
// float32 (sgemm::Element): converted on load, accumulated in float32. Halves'
// windows are smaller, so the ring holds more of them (RING, below): the
// bytes of B in flight stay those of float32, which is what keeps a
// memory-bound kernel at memory speed.
//
// Template constants (mlx_sgemm/build/specs.py, cuda_small_m): BN columns per
// block (= the spec's block_n), WARPS (threads = 32 WARPS = the spec's
// threadgroup), STAGES (the ring's bytes, in windows of float32: the spec's
// shared memory), TA and TB (the operands' element types).
//
// Measured on an H200, BN 32, 8 warps, 4 stages, float32, the kernel alone
// (Nsight Compute, L2 flushed; cuBLAS or MLX's gemv for mx.matmul in brackets):
// 4096 x 4096, M = 1: 21.3 us = 3.1 TB/s (19.0 us); N or K = 14336, M = 1:
// 3.5-4.1 TB/s (4.0); M = 8, x @ W.T: 2.3-3.1 TB/s (3.0-3.7). B through
// registers, B's ring alone with A read from L1 / L2 at each step, split-K
// across clusters, 16 warps and BN 16 were all slower (docs/performance-log.md,
// "small_m: B and A through a ring of cp.async windows").
constexpr int BLOCK_M = 8;  // rows of C per block (= the spec's block_m)
constexpr int THREADS = 32 * WARPS;
constexpr int STEP = 4;                      // runs of 4 of B a thread takes per window
constexpr int WK = 4 * STEP * THREADS / BN;  // the window's k extent
using VA = sgemm::Operand<TA>::Vec4;         // a run of 4 of A / of B, as in memory
using VB = sgemm::Operand<TB>::Vec4;

// Row-major: threads across the strip's columns, and the k-groups that split
// the window's rows.
constexpr int LANES_N = BN / 4;
constexpr int K_GROUPS = THREADS / LANES_N;
static_assert(BN % 4 == 0 && THREADS % LANES_N == 0 && (LANES_N % 32 == 0 || 32 % LANES_N == 0),
              "row-major: whole runs of 4, the block a whole number of column sweeps");
static_assert(STEP * K_GROUPS == WK, "row-major: the k-groups' rows make the window");
constexpr int WARP_K_GROUPS = LANES_N < 32 ? 32 / LANES_N : 1;  // k-groups inside one warp
constexpr int ROW_SLOTS = K_GROUPS / WARP_K_GROUPS;
// Column-major: groups of 4 columns, PARTS warps to a group.
constexpr int GROUPS = BN / 4;
static_assert(WARPS % GROUPS == 0, "column-major: every warp takes one group of 4 columns");
constexpr int PARTS = WARPS / GROUPS;
static_assert(128 * PARTS == WK, "column-major: the parts' runs of K make the window");
constexpr int SLOTS = ROW_SLOTS > PARTS ? ROW_SLOTS : PARTS;

// Shared memory (dynamic: the spec's shared memory): the ring's windows, each
// B's slots [STEP][THREADS] runs of 4 (VB), then A's [BLOCK_M][WK] elements
// (TA); after the last window the same bytes hold the partial sums' slots
// [SLOTS][BLOCK_M][BN] (float32). The ring has the bytes of STAGES windows of
// float32 and as many windows of these types as fit in them (STAGES of
// float32, 2 STAGES where both operands are halves).
constexpr int B_BYTES = STEP * THREADS * sizeof(VB);
constexpr int WINDOW_BYTES = B_BYTES + BLOCK_M * WK * sizeof(TA);
constexpr int FLOAT32_WINDOW_BYTES = 4 * (4 * STEP * THREADS + BLOCK_M * WK);
constexpr int RING = STAGES * FLOAT32_WINDOW_BYTES / WINDOW_BYTES;  // windows in the ring
static_assert(RING >= 2, "a ring: the window in use and the ones in flight");
static_assert(B_BYTES % 16 == 0 && WINDOW_BYTES % 16 == 0, "windows of whole 16-byte copies");
constexpr int RING_BYTES = RING * WINDOW_BYTES;
constexpr int SLOT_BYTES = 4 * SLOTS * BLOCK_M * BN;
constexpr int SHARED_BYTES = RING_BYTES > SLOT_BYTES ? RING_BYTES : SLOT_BYTES;
extern __shared__ float4 smem_float4[];
float* const smem = reinterpret_cast<float*>(smem_float4);  // the slots
char* const ring = reinterpret_cast<char*>(smem_float4);

const auto t = sgemm::locate_tile(  // C: float32, or the operands' half type
    BLOCK_M, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);

// The grid, thread count and shared memory come from the spec; one that
// disagrees with this template gets NaN, not a partly written C.
if (blockDim.x != THREADS || params[sgemm::P_TILES_N] != (t.N + BN - 1) / BN ||
    sgemm::dynamic_shared_bytes() < SHARED_BYTES) {
  sgemm::write_nan_tile<BLOCK_M, BN>(t);
  return;
}

const int K = t.K;
const int windows = (K + WK - 1) / WK;
const int rows = min(BLOCK_M, t.M - t.row0);  // rows of C in this tile
auto window_bytes = [&](int w) { return ring + (w % RING) * WINDOW_BYTES; };
auto a_window = [&](int w) { return reinterpret_cast<TA*>(window_bytes(w) + B_BYTES); };
// This thread's run v of window w: consecutive threads own consecutive runs,
// so a warp's copies and reads hit every bank once.
auto b_slot = [&](int w, int v) {
  return reinterpret_cast<TB*>(window_bytes(w)) + 4 * (v * THREADS + threadIdx.x);
};
// A run of 4 in shared memory, as float32.
auto a_run = [](const TA* p) { return sgemm::Element<TA>::to_float4(*reinterpret_cast<const VA*>(p)); };
auto b_run = [](const TB* p) { return sgemm::Element<TB>::to_float4(*reinterpret_cast<const VB*>(p)); };

// Start copying window w's A: rows 0..ROWS-1 of this row tile at k = w WK ...
// (rows past M and k past K zero).
const sgemm::Operand<TA> A = t.A;
const bool a_vector = A.vectorizes<sgemm::ROW_MAJOR>();
const TA* const a_top = A.p + t.row0 * A.rs;
auto copy_a = [&](int w, auto rows_of_c) {
  constexpr int ROWS = decltype(rows_of_c)::value;
  TA* const window = a_window(w);
  for (int i = threadIdx.x; i < ROWS * WK / 4; i += THREADS) {
    const int r = i / (WK / 4), kw = 4 * (i % (WK / 4)), k = w * WK + kw;
    TA* const dst = window + r * WK + kw;
    if (a_vector && r < rows && k + 4 <= K) sgemm::cp_async<sizeof(VA)>(dst, a_top + r * A.rs + k, sizeof(VA));
    else sgemm::cp_async_vec4<sgemm::ROW_MAJOR>(dst, A, t.row0 + r, k, a_vector);
  }
};

// The ring: copy_b(w) starts the copies of this thread's runs of window w,
// compute(w) takes the window's products. The copies of window w + RING - 1
// go out right after the barrier that says window w has landed for every
// thread (and that every thread is done with the slots they overwrite).
auto stream = [&](auto rows_of_c, auto copy_b, auto compute) {
  auto copy = [&](int w) {
    if (w < windows) {
      copy_a(w, rows_of_c);
      copy_b(w);
    }
    sgemm::cp_async_commit();  // every call commits: a fixed wait count means "window w"
  };
  for (int w = 0; w < RING - 1; ++w) copy(w);
  for (int w = 0; w < windows; ++w) {
    sgemm::cp_async_wait<RING - 2>();
    __syncthreads();
    copy(w + RING - 1);
    compute(w);
  }
  sgemm::cp_async_wait<0>();
  __syncthreads();  // the slots below reuse the ring
};

auto row_major = [&](auto rows_of_c) {
  constexpr int ROWS = decltype(rows_of_c)::value;
  const sgemm::Operand<TB> B = t.B;
  const bool b_vector = B.vectorizes<sgemm::ROW_MAJOR>();
  const int tn = threadIdx.x % LANES_N, tk = threadIdx.x / LANES_N;
  const int col = t.col0 + 4 * tn;
  // Rows w WK + 4 tk + v, columns col..col + 3; whole and aligned in B for all
  // but the last window and the strip's edge.
  const bool whole_columns = b_vector && col + 3 < t.N;
  const TB* const b_first = B.p + STEP * tk * B.rs + col;
  float acc[ROWS][4] = {};
  stream(
      rows_of_c,
      [&](int w) {
        const int k = w * WK + STEP * tk;
        if (whole_columns && k + STEP <= K) {
          const TB* const p = b_first + w * WK * B.rs;
#pragma unroll
          for (int v = 0; v < STEP; ++v) sgemm::cp_async<sizeof(VB)>(b_slot(w, v), p + v * B.rs, sizeof(VB));
        } else {
#pragma unroll
          for (int v = 0; v < STEP; ++v)
            sgemm::cp_async_vec4<sgemm::ROW_MAJOR>(b_slot(w, v), B, k + v, col, b_vector);
        }
      },
      [&](int w) {
        float4 bv[STEP];
#pragma unroll
        for (int v = 0; v < STEP; ++v) bv[v] = b_run(b_slot(w, v));
        const TA* const aw = a_window(w) + STEP * tk;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          const float4 a4 = a_run(aw + r * WK);
          const float av[STEP] = {a4.x, a4.y, a4.z, a4.w};
#pragma unroll
          for (int v = 0; v < STEP; ++v) {
            acc[r][0] += av[v] * bv[v].x;
            acc[r][1] += av[v] * bv[v].y;
            acc[r][2] += av[v] * bv[v].z;
            acc[r][3] += av[v] * bv[v].w;
          }
        }
      });

  // The k-groups inside a warp (lanes LANES_N apart share columns) by
  // shuffles, then one slot per warp (or per k-group, when a sweep spans warps).
#pragma unroll
  for (int offset = LANES_N; offset < 32; offset *= 2)
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], offset);
  if (tk % WARP_K_GROUPS == 0) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
      *reinterpret_cast<float4*>(&smem[((tk / WARP_K_GROUPS) * BLOCK_M + r) * BN + 4 * tn]) =
          make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
  }
};

auto col_major = [&](auto rows_of_c) {
  constexpr int ROWS = decltype(rows_of_c)::value;
  const sgemm::Operand<TB> B = t.B;
  const bool b_vector = B.vectorizes<sgemm::COL_MAJOR>();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = warp % GROUPS, part = warp / GROUPS;
  const int col = t.col0 + 4 * group;
  const int k_lane = 4 * (32 * part + lane);  // this lane's run of 4 of the window
  // Columns col + v, rows w WK + k_lane ..; whole and aligned in B for all but
  // the last window. (Columns past N repeat column N - 1 there: in bounds,
  // never stored.)
  const TB* b_first[STEP];
#pragma unroll
  for (int v = 0; v < STEP; ++v) b_first[v] = B.p + min(col + v, t.N - 1) * B.cs + k_lane;
  float acc[ROWS * 4] = {};  // acc[4 r + j]: row r, column j
  stream(
      rows_of_c,
      [&](int w) {
        const int k = w * WK + k_lane;
        if (b_vector && k + 4 <= K) {
#pragma unroll
          for (int v = 0; v < STEP; ++v) sgemm::cp_async<sizeof(VB)>(b_slot(w, v), b_first[v] + w * WK, sizeof(VB));
        } else {
#pragma unroll
          for (int v = 0; v < STEP; ++v)
            sgemm::cp_async_vec4<sgemm::COL_MAJOR>(b_slot(w, v), B, k, col + v, b_vector);
        }
      },
      [&](int w) {
        float4 bv[STEP];
#pragma unroll
        for (int v = 0; v < STEP; ++v) bv[v] = b_run(b_slot(w, v));
        const TA* const aw = a_window(w) + k_lane;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          const float4 a4 = a_run(aw + r * WK);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            float& s = acc[4 * r + j];
            s += a4.x * bv[j].x;
            s += a4.y * bv[j].y;
            s += a4.z * bv[j].z;
            s += a4.w * bv[j].w;
          }
        }
      });

  // Lanes i * 8 / ROWS .. end with the whole sum of acc[i]: row i / 4, column i % 4.
  const float sum = sgemm::warp_sum_spread(acc);
  constexpr int COPIES = 8 / ROWS;  // lanes holding each sum
  const int i = lane / COPIES;
  if (lane % COPIES == 0) smem[(part * BLOCK_M + i / 4) * BN + 4 * group + i % 4] = sum;
};

const bool b_col_major = t.B.layout() == sgemm::COL_MAJOR;
sgemm::with_rows_of_c<BLOCK_M>(rows, [&](auto rows_of_c) {
  if (b_col_major) col_major(rows_of_c);
  else row_major(rows_of_c);
});

// The block's sums: its slots, added in order, stored.
__syncthreads();
sgemm::store_slot_sums<BLOCK_M, BN, THREADS>(t, smem, b_col_major ? PARTS : ROW_SLOTS, rows);
