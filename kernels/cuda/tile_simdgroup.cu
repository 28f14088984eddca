// Stage 4, tile_simdgroup: the matrix units. NVIDIA's counterpart of Metal's
// simdgroup_float8x8 is the warp-wide tensor-core product mma.sync; a warp
// multiplies a 16x8 by an 8x8 tile in one instruction.
//
// Tensor cores read float32 inputs as TF32 (10 mantissa bits, ~3e-4 relative
// error). To stay float32-accurate every operand is split into two TF32 parts,
// x = big + small, and each product is computed as three tensor-core products
// (3xTF32): small*big + big*small + big*big. Three times the work, still far
// faster than the FMA units.
//
// Block: BM x BN = 128x128 outputs, 8 warps as 2 (rows) x 4 (columns), each warp
// a WM x WN = 64x32 tile of 4x4 m16n8 products. K advances BK = 32 at a time
// through shared memory.
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
constexpr int MI = WM / 16;  // m16 tiles per warp
constexpr int NI = WN / 8;   // n8 tiles per warp
static_assert(THREADS == 256, "the spec launches 256 threads");
static_assert((BM * BK) % (4 * THREADS) == 0 && (BK * BN) % (4 * THREADS) == 0,
              "tiles load as whole float4 passes");

// Padding makes the fragment reads conflict-free: a warp reads 8 rows x 4
// columns of As (row stride 36 = 4 mod 32 banks) and 4 rows x 8 columns of Bs
// (row stride 136 = 8 mod 32 banks): 32 different banks each time.
constexpr int AS_LD = BK + 4, BS_LD = BN + 8;
__shared__ __align__(16) float As[BM][AS_LD];
__shared__ __align__(16) float Bs[BK][BS_LD];

const sgemm::Tile t = sgemm::locate_tile(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tid = threadIdx.x;
const int lane = tid % 32, warp = tid / 32;
const int g = lane / 4, tg = lane % 4;  // the fragment coordinates of this lane
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
const bool a_aligned = sgemm::rows_are_float4_aligned(t.A, t.lda);
const bool b_aligned = sgemm::rows_are_float4_aligned(t.B, t.ldb);

constexpr int A_THREADS_PER_ROW = BK / 4, A_ROWS_PER_PASS = THREADS / A_THREADS_PER_ROW;
constexpr int B_THREADS_PER_ROW = BN / 4, B_ROWS_PER_PASS = THREADS / B_THREADS_PER_ROW;
const int a_row = tid / A_THREADS_PER_ROW, a_col = (tid % A_THREADS_PER_ROW) * 4;
const int b_row = tid / B_THREADS_PER_ROW, b_col = (tid % B_THREADS_PER_ROW) * 4;

float acc[MI][NI][4] = {};
for (int k0 = 0; k0 < t.K; k0 += BK) {
#pragma unroll
  for (int r = 0; r < BM; r += A_ROWS_PER_PASS) {
    *reinterpret_cast<float4*>(&As[a_row + r][a_col]) = sgemm::load4_or_zero(
        t.A, t.lda, t.row0 + a_row + r, k0 + a_col, t.M, t.K, a_aligned);
  }
#pragma unroll
  for (int r = 0; r < BK; r += B_ROWS_PER_PASS) {
    *reinterpret_cast<float4*>(&Bs[b_row + r][b_col]) = sgemm::load4_or_zero(
        t.B, t.ldb, k0 + b_row + r, t.col0 + b_col, t.K, t.N, b_aligned);
  }
  __syncthreads();

#pragma unroll
  for (int kk = 0; kk < BK; kk += 8) {
    // Split each fragment element once; it then serves NI (or MI) products.
    uint32_t a_big[MI][4], a_small[MI][4], b_big[NI][2], b_small[NI][2];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const int r = wm0 + i * 16 + g;
      const float v[4] = {As[r][kk + tg], As[r + 8][kk + tg],
                          As[r][kk + tg + 4], As[r + 8][kk + tg + 4]};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const sgemm::SplitTF32 s = sgemm::split_tf32(v[e]);
        a_big[i][e] = s.big;
        a_small[i][e] = s.small;
      }
    }
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int col = wn0 + j * 8 + g;
      const float v[2] = {Bs[kk + tg][col], Bs[kk + tg + 4][col]};
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const sgemm::SplitTF32 s = sgemm::split_tf32(v[e]);
        b_big[j][e] = s.big;
        b_small[j][e] = s.small;
      }
    }
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        sgemm::mma_m16n8k8_tf32(acc[i][j], a_small[i], b_big[j]);
        sgemm::mma_m16n8k8_tf32(acc[i][j], a_big[i], b_small[j]);
        sgemm::mma_m16n8k8_tf32(acc[i][j], a_big[i], b_big[j]);
      }
    }
  }
  __syncthreads();
}

#pragma unroll
for (int i = 0; i < MI; ++i) {
#pragma unroll
  for (int j = 0; j < NI; ++j) {
    const int row = t.row0 + wm0 + i * 16 + g;
    const int col = t.col0 + wn0 + j * 8 + 2 * tg;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row + (e / 2) * 8, cc = col + e % 2;
      if (r < t.M && cc < t.N) t.C[r * t.ldc + cc] = acc[i][j][e];
    }
  }
}
