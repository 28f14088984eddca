// Stage 4, tile_simdgroup: the matrix units. NVIDIA's counterpart of Metal's
// simdgroup_float8x8 is the warp-wide tensor-core product mma.sync; a warp
// multiplies a 16x8 by an 8x8 tile in one instruction.
//
// Tensor cores read float32 inputs as TF32 (10 mantissa bits, ~3e-4 relative
// error). To stay float32-accurate every operand is split into two TF32 parts,
// x = big + small, and each product is computed as three tensor-core products
// (3xTF32): small*big + big*small + big*big, see sgemm::mma_3xtf32. Three
// times the work, still faster than the FMA units.
//
// Block: BM x BN = 128x128 outputs, 8 warps as 2 (rows) x 4 (columns), each warp
// a WM x WN = 64x32 tile of 4x4 m16n8 products (sgemm::warp_tile_mma). K
// advances BK = 16 at a time through shared memory, loaded through registers.
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
static_assert(THREADS == 256, "the spec launches 256 threads");
static_assert((BM * BK) % (4 * THREADS) == 0 && (BK * BN) % (4 * THREADS) == 0,
              "tiles load as whole float4 passes");

constexpr int AS_LD = BK + 4, BS_LD = BN + 8;  // padding: conflict-free fragments
__shared__ __align__(16) float As[BM * AS_LD];
__shared__ __align__(16) float Bs[BK * BS_LD];

const sgemm::Tile t = sgemm::locate_tile(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tid = threadIdx.x, warp = tid / 32;
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
const bool a_aligned = sgemm::rows_are_float4_aligned(t.A, t.lda);
const bool b_aligned = sgemm::rows_are_float4_aligned(t.B, t.ldb);

constexpr int A_THREADS_PER_ROW = BK / 4, A_ROWS_PER_PASS = THREADS / A_THREADS_PER_ROW;
constexpr int B_THREADS_PER_ROW = BN / 4, B_ROWS_PER_PASS = THREADS / B_THREADS_PER_ROW;
const int a_row = tid / A_THREADS_PER_ROW, a_col = (tid % A_THREADS_PER_ROW) * 4;
const int b_row = tid / B_THREADS_PER_ROW, b_col = (tid % B_THREADS_PER_ROW) * 4;

float acc[WM / 16][WN / 8][4] = {};
for (int k0 = 0; k0 < t.K; k0 += BK) {
#pragma unroll
  for (int r = 0; r < BM; r += A_ROWS_PER_PASS) {
    *reinterpret_cast<float4*>(&As[(a_row + r) * AS_LD + a_col]) = sgemm::load4_or_zero(
        t.A, t.lda, t.row0 + a_row + r, k0 + a_col, t.M, t.K, a_aligned);
  }
#pragma unroll
  for (int r = 0; r < BK; r += B_ROWS_PER_PASS) {
    *reinterpret_cast<float4*>(&Bs[(b_row + r) * BS_LD + b_col]) = sgemm::load4_or_zero(
        t.B, t.ldb, k0 + b_row + r, t.col0 + b_col, t.K, t.N, b_aligned);
  }
  __syncthreads();
  sgemm::warp_tile_mma<WM / 16, WN / 8, BK, AS_LD, BS_LD, true>(acc, As, Bs, wm0, wn0);
  __syncthreads();
}
sgemm::store_warp_tile(t, acc, wm0, wn0);
