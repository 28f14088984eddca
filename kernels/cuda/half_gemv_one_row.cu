#include "sgemm/epilogue.cuh"
#include "sgemm/gemv_one_row.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/params.cuh"
#include "sgemm/schedule.cuh"
// half_gemv_one_row: C = A @ B one row of A at a time (a token's activations
// against a weight matrix) when both are float16 or both bfloat16, float32
// sums, C rounded once to TC (the operands' type, or float32 for gemm).
//
// Why a kernel of its own beside half_gemv: a token's product is bound by
// reading B, and what reads B fastest from memory is many warps, each with its
// own stretch of bytes in flight. half_gemv's mma fragments serve up to 8 rows
// of A at once and hold 16 warps an SM; for one row, MLX's GEMV (a warp a
// column of C, 64 warps an SM) read W 5-10% faster (docs/performance-log.md,
// "A bfloat16 token's product: MLX's GEMV as a custom kernel"). This is that
// GEMV for x @ W.T (column-major B, k contiguous), with PARTS warps a column:
// MLX's one warp leaves half an H200's warps idle where W has 4096 rows. The
// host sends it only products it knows to be of that layout (a model layer's
// x @ W.T: kernel_choice.for_operands), since the grid is the layout's; other
// layouts get correct, slower ways (sgemm/gemv_one_row.cuh).
//
// It takes a layer's operands as the layer holds them (sgemm::locate_layer_row,
// launcher.layer_call): x at its own rank and W itself, not W's transposed view
// and x's rows reshaped to a matrix, so that a layer's product is one node of
// MLX's graph where it was three (a decode step is bound by the host's time a
// node: docs/performance-log.md, "A layer's product, one node").
//
// Block: 8 warps, tile: one row of C by 8 / PARTS columns (block_m 1), so
// any number of rows works, each row of C by its own blocks.
// - column-major B: warp w takes column col0 + w % BN, a row of W, and its
//   part w / BN of the row's 16-byte runs: lane l reads run l + 32 (part +
//   PARTS i), and 16 bytes of A's row at the same k through L1 (read by every
//   warp), UNROLL loads in flight a lane. The lanes' sums meet by shuffles,
//   the parts' in shared memory, in order. Plain loads: through L1 without
//   the L2::256B hint (which half_gemv's wider warps want) MLX's GEMV cloned
//   read W 2% faster.
// - row-major B (x @ W): 32 columns a block in 64-byte runs of a row, by the
//   first BN / 32 of the grid's blocks (the others return at once).
// - any other strides: a warp a column, element by element.
// Every sum is added in a fixed order: a repeated product is bitwise the same.
//
// Template constants (mlx_sgemm/build/specs.py, cuda_half_gemv_one_row):
// UNROLL (loads of B in flight a lane), PARTS (warps a column), TA = TB (the
// half type), TC (C's type).
constexpr int WARPS = 8;
constexpr int THREADS = 32 * WARPS;
constexpr int BN = WARPS / PARTS;  // columns of C a block for column-major B: PARTS warps each
constexpr int RUN = sgemm::ONE_ROW_RUN;
using T = TA;
static_assert(sizeof(TA) == 2 && sizeof(TB) == 2, "one half type for both operands");

__shared__ float warp_sums[WARPS * 4 * RUN];  // each warp's sums: of its column's part, or (row-major B) of 32 columns

// a: x (a_ndim dimensions), b: W (N x K).
const auto t = sgemm::locate_layer_row(BN, params, a, a_shape, a_strides, a_ndim, b, b_strides, c);

// The grid and thread count come from the spec; one that disagrees with this
// template gets NaN, not a partly written C.
if (blockDim.x != THREADS || params[sgemm::P_TILES_N] != (t.N + BN - 1) / BN ||
    params[sgemm::P_TILES_M] != params[sgemm::P_M]) {
  sgemm::write_nan_tile<1, BN>(t);
  return;
}

const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int K = t.K;
const sgemm::Operand<TA> A = t.A;
const sgemm::Operand<TB> B = t.B;
const TA* const x = A.p + t.row0 * A.rs;  // this row of A
TC* const c_row = t.C + t.row0 * t.ldc;

if (B.rs == 1 && B.cs % RUN == 0 && sgemm::is_16_byte_aligned(B.p) && A.cs == 1 && sgemm::is_16_byte_aligned(x)) {
  // Warp w: column col0 + w % BN, its part w / BN of the runs (run j of 8 k
  // goes to part j / 32 % PARTS).
  const int part = warp / BN, n = t.col0 + warp % BN;
  const bool inside = n < t.N;
  const TB* const w = B.p + (inside ? n : 0) * B.cs;
  float sum[1] = {0.0f};
  if (inside) sgemm::one_row_column_sums<1, PARTS, UNROLL>({w}, x, K, part, sum);
  const float total = sgemm::warp_sum_spread<1>(sum);
  if constexpr (PARTS == 1) {
    if (lane == 0 && inside) c_row[n] = sgemm::Element<TC>::from_float(total);
  } else {  // the parts of a column added in order
    if (lane == 0) warp_sums[warp] = total;
    __syncthreads();
    if (threadIdx.x < BN && t.col0 + threadIdx.x < t.N) {
      float s = warp_sums[threadIdx.x];
      for (int q = 1; q < PARTS; ++q) s += warp_sums[q * BN + threadIdx.x];
      c_row[t.col0 + threadIdx.x] = sgemm::Element<TC>::from_float(s);
    }
  }
} else if (B.cs == 1 && B.rs % RUN == 0 && sgemm::is_16_byte_aligned(B.p)) {
  const int col0 = (t.col0 / BN) * 4 * RUN;  // uniform over the block, which syncs inside
  if (col0 < t.N) sgemm::one_row_row_major<WARPS>(B, x, A.cs, K, t.N, col0, c_row, warp_sums);
} else if (warp < BN && t.col0 + warp < t.N) {
  sgemm::one_row_by_elements(A, B, t.row0, t.col0 + warp, c_row);
}
