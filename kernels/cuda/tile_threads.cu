// Stage 3, tile_threads: register tiling. Each thread computes TM x TN = 8x8
// outputs of a BM x BN = 128x128 block with 256 threads.
//
// Why this shape on NVIDIA: an 8x8 register tile does 64 FMAs for every 16
// values it reads from shared memory (vs. 2 reads per FMA in the tiled stage), so
// the FMA units, not shared memory, become the limit; 64 accumulators plus
// operands fit in 128 registers, which lets 2 blocks (16 warps) share an SM to
// hide latency (the spec caps registers there). Seed 000's 4x4-per-thread,
// 8x8-thread layout suits the smaller Apple register file; see
// kernels/metal/tile_threads.metal.
//
// Each thread's 8 rows are two runs of 4 (rows 4*ty.. and 64+4*ty..), likewise
// its columns: then every shared-memory read is one 16-byte load that a warp
// serves without bank conflicts, and every store of C is a coalesced float4.
static_assert(TM == 8 && TN == 8, "the thread layout below assumes 8x8 per thread");
static_assert(BM == 128 && BN == 128 && BK % 4 == 0, "256 threads load the tiles");
constexpr int THREADS = (BM / TM) * (BN / TN);
constexpr int HALF_M = BM / 2, HALF_N = BN / 2;

// Both tiles are k-major: As[k][m] (A transposed) and Bs[k][n], so a thread's 4
// consecutive rows or columns are one float4. +4 floats of padding per row
// spreads the transposing stores (A row-major, or B a transposed view) over the
// banks.
__shared__ __align__(16) float As[BK][BM + 4];
__shared__ __align__(16) float Bs[BK][BN + 4];

const sgemm::Tile t = sgemm::locate_tile(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int ty = threadIdx.x / (BN / TN), tx = threadIdx.x % (BN / TN);

// As is the K x M view of A: its layout decides how A's tile is read (16 bytes
// down the K x M view's columns for a row-major A, along its rows for A.T).
sgemm::with_layouts(t.A.transposed(), t.B, [&](auto a_layout, auto b_layout) SGEMM_MAIN_LOOP {
  constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < t.K; k0 += BK) {
    sgemm::load_tile<BK, BM, BM + 4, THREADS, AL>(&As[0][0], t.A.transposed(), k0, t.row0);
    sgemm::load_tile<BK, BN, BN + 4, THREADS, BL>(&Bs[0][0], t.B, k0, t.col0);
    __syncthreads();

#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float av[TM], bv[TN];
      *reinterpret_cast<float4*>(&av[0]) = *reinterpret_cast<const float4*>(&As[k][4 * ty]);
      *reinterpret_cast<float4*>(&av[4]) = *reinterpret_cast<const float4*>(&As[k][HALF_M + 4 * ty]);
      *reinterpret_cast<float4*>(&bv[0]) = *reinterpret_cast<const float4*>(&Bs[k][4 * tx]);
      *reinterpret_cast<float4*>(&bv[4]) = *reinterpret_cast<const float4*>(&Bs[k][HALF_N + 4 * tx]);
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          acc[i][j] += av[i] * bv[j];
        }
      }
    }
    __syncthreads();
  }

  const bool c_aligned = t.ldc % 4 == 0 && sgemm::is_16_byte_aligned(t.C);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = t.row0 + (i < 4 ? 4 * ty + i : HALF_M + 4 * ty + i - 4);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int col = t.col0 + half * HALF_N + 4 * tx;
      const float* v = &acc[i][4 * half];
      sgemm::store4_clipped(
          t.C, t.ldc, row, col, t.M, t.N, c_aligned, make_float4(v[0], v[1], v[2], v[3]));
    }
  }
});
