// small_m: C = A @ B when A has few rows (M <= 8: a token's activations against
// a weight matrix), in plain FP32 FMAs.
//
// Why a kernel of its own: with 8 rows of A every element of B is used 8 times,
// so the product is bound by reading B (K x N floats) once from device memory,
// not by arithmetic. A 128x128 tile would spend 120 of its 128 rows on nothing
// and start only N / 128 blocks. Here a block owns BLOCK_M = 8 rows of C and BN
// columns, and everything serves one goal: keep enough 16-byte loads of B in
// flight on every SM to run at memory bandwidth. (Any M is correct: larger M
// takes several row tiles, each reading B again.) K can be split across blocks
// too, outside this kernel: A and B viewed as (S, M, K/S) and (S, K/S, N) batches,
// summed over S afterwards (views, no copies: the kernel takes any strides).
//
// B's layout decides the access pattern:
// - row-major (x @ W): a row of B is contiguous. BN/4 threads each take a float4
//   of the block's columns; the other threads of the block split K among
//   themselves, each U consecutive rows of B per step (U loads in flight); A's 8
//   x U values come as float4s that all lanes of a k-group share (broadcast, L1).
//   The k-groups' partial 8 x BN results meet in shared memory at the end.
// - column-major (x @ W.T, B a transposed view: nn.Linear's layout): a column of
//   B is contiguous. Each warp takes 4 columns over all of K, its 32 lanes a
//   float4 of K each (a warp reads 512 contiguous bytes of a column), UC float4s
//   per column in flight; every lane then holds 8 x 4 partial dot products, which
//   one transposing warp reduction (sgemm::warp_sum_spread) turns into the 32
//   results, one per lane.
// Strides that allow no 16-byte loads (odd N or K, slices) are read element by
// element, in the same patterns.
//
// Template constants (mlx_sgemm/specs.py): BN columns per block (= the spec's
// block_n), WARPS (threads = 32 WARPS = the spec's threadgroup), U, UC.
// Tried on an H200 and not kept: A staged in shared memory per K chunk (fewer
// registers, but a barrier and an L2 round trip per chunk: 2x slower), loads of
// the next step issued before this step's FMAs (more registers, fewer warps:
// slower), and split-K S = 2..16 through batch views (each extra launch and the
// sum cost more than the blocks gain, at every shape of the 7B suite).
constexpr int BLOCK_M = 8;  // rows of C per block (= the spec's block_m)
constexpr int THREADS = 32 * WARPS;
constexpr int LANES_N = BN / 4;             // row-major: threads across the columns
constexpr int K_GROUPS = THREADS / LANES_N;  // row-major: threads that split K
constexpr int COL_GROUPS = BN / (4 * WARPS);  // column-major: 4-column groups per warp
static_assert(BN % 4 == 0 && THREADS % LANES_N == 0 && (LANES_N % 32 == 0 || 32 % LANES_N == 0),
              "row-major: whole float4s, the block a whole number of column sweeps");
static_assert(BN % (4 * WARPS) == 0, "column-major: every warp takes whole groups of 4 columns");
static_assert(U % 4 == 0 && UC >= 1, "U rows of B per step: A's values as whole float4s");

// Row-major: the k-groups inside a warp are summed by shuffles, then one slot per
// warp (or per k-group, when a column sweep spans warps) in shared memory.
constexpr int WARP_K_GROUPS = LANES_N < 32 ? 32 / LANES_N : 1;
constexpr int SLOTS = K_GROUPS / WARP_K_GROUPS;
static_assert(SLOTS * BLOCK_M * BN * 4 <= 48 * 1024, "partial sums fit in static shared memory");
__shared__ __align__(16) float partial[SLOTS][BLOCK_M][BN];

const sgemm::Tile t = sgemm::locate_tile(
    BLOCK_M, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);

// The grid and thread count come from the spec's block_n and threadgroup: a
// spec whose template disagrees with them would leave parts of C unwritten, so
// it writes NaN instead, which no check can miss.
if (blockDim.x != THREADS || params[sgemm::P_TILES_N] != (t.N + BN - 1) / BN) {
  for (int i = threadIdx.x; i < BLOCK_M * BN; i += blockDim.x) {
    const int r = t.row0 + i / BN, col = t.col0 + i % BN;
    if (r < t.M && col < t.N) t.C[r * t.ldc + col] = __int_as_float(0x7fc00000);
  }
  return;
}

// B is read once: its lines bypass L1 (ld.global.nc.L1::no_allocate), which
// then keeps A for all the block's warps. Measured on an H200 (BN 32, 4 warps):
// 103 vs 122 us geometric mean over the big column-major shapes, 116 vs 121
// row-major.
auto load_b = [](const float* p) -> float4 {
  float4 v;
  asm("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
};

// Rows past M (M % 8 != 0) repeat row M - 1: the loads stay in bounds without a
// branch, and those rows are never stored.
const int last_row = t.M - 1 - t.row0;
const bool c_aligned = t.ldc % 4 == 0 && sgemm::is_16_byte_aligned(t.C);

// Row-major: sum the k-groups' partial 8 x BN results and store them. First
// the k-groups inside a warp (lanes LANES_N apart share columns), by shuffles,
// then one slot per warp through shared memory.
auto finish_row_major = [&](float (&acc)[BLOCK_M][4], int tn, int tk) {
#pragma unroll
  for (int offset = LANES_N; offset < 32; offset *= 2)
#pragma unroll
    for (int r = 0; r < BLOCK_M; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], offset);
  if (tk % WARP_K_GROUPS == 0) {
#pragma unroll
    for (int r = 0; r < BLOCK_M; ++r)
      *reinterpret_cast<float4*>(&partial[tk / WARP_K_GROUPS][r][4 * tn]) =
          make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < BLOCK_M * LANES_N; i += THREADS) {
    const int r = i / LANES_N, c4 = 4 * (i % LANES_N);
    float4 sum = *reinterpret_cast<const float4*>(&partial[0][r][c4]);
#pragma unroll
    for (int s = 1; s < SLOTS; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(&partial[s][r][c4]);
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    sgemm::store4_clipped(t.C, t.ldc, t.row0 + r, t.col0 + c4, t.M, t.N, c_aligned, sum);
  }
};

auto row_major = [&](auto a_vector) SGEMM_MAIN_LOOP {
  constexpr bool AV = decltype(a_vector)::value;  // A's rows allow float4 loads
  const sgemm::Operand A = t.A, B = t.B;
  const int K = t.K;
  const int tn = threadIdx.x % LANES_N, tk = threadIdx.x / LANES_N;
  const int col = t.col0 + 4 * tn;
  const float* a_row[BLOCK_M];
#pragma unroll
  for (int r = 0; r < BLOCK_M; ++r) a_row[r] = A.p + (t.row0 + min(r, last_row)) * A.rs;

  float acc[BLOCK_M][4] = {};
  auto step = [&](int k, const float4 (&bv)[U]) {
#pragma unroll
    for (int r = 0; r < BLOCK_M; ++r) {
      float av[U];
#pragma unroll
      for (int q = 0; q < U; q += 4) {
        if (AV) {
          *reinterpret_cast<float4*>(&av[q]) = __ldg(reinterpret_cast<const float4*>(a_row[r] + k + q));
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) av[q + e] = a_row[r][(k + q + e) * A.cs];
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        acc[r][0] += av[u] * bv[u].x;
        acc[r][1] += av[u] * bv[u].y;
        acc[r][2] += av[u] * bv[u].z;
        acc[r][3] += av[u] * bv[u].w;
      }
    }
  };

  // Whole steps: U rows of B, all inside K. A thread whose 4 columns are whole
  // and 16-byte aligned loads each row's float4 at once (every thread but those
  // of the last block on an edge); the others element by element.
  int k = tk * U;
  if (B.vectorizes<sgemm::ROW_MAJOR>() && col + 3 < t.N) {
    auto load_rows = [&](int k, float4 (&bv)[U]) {
#pragma unroll
      for (int u = 0; u < U; ++u) bv[u] = load_b(B.p + (k + u) * B.rs + col);
    };
    for (; k + U <= K; k += K_GROUPS * U) {
      float4 bv[U];
      load_rows(k, bv);
      step(k, bv);
    }
  } else {
    for (; k + U <= K; k += K_GROUPS * U) {
      float4 bv[U];
#pragma unroll
      for (int u = 0; u < U; ++u) bv[u] = B.load4<sgemm::ROW_MAJOR>(k + u, col, false);
      step(k, bv);
    }
  }
  // The one step that runs past K (for one k-group at most): row by row.
  for (int u = 0; u < U && k + u < K; ++u) {
    const float4 b4 = B.load4<sgemm::ROW_MAJOR>(k + u, col, false);
#pragma unroll
    for (int r = 0; r < BLOCK_M; ++r) {
      const float av = a_row[r][(k + u) * A.cs];
      acc[r][0] += av * b4.x;
      acc[r][1] += av * b4.y;
      acc[r][2] += av * b4.z;
      acc[r][3] += av * b4.w;
    }
  }

  finish_row_major(acc, tn, tk);
};

auto col_major = [&](auto a_vector) SGEMM_MAIN_LOOP {
  constexpr bool AV = decltype(a_vector)::value;
  const sgemm::Operand A = t.A, B = t.B;
  const int K = t.K;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* a_row[BLOCK_M];
#pragma unroll
  for (int r = 0; r < BLOCK_M; ++r) a_row[r] = A.p + (t.row0 + min(r, last_row)) * A.rs;
  // A warp step covers 128 * UC of K; whole steps only where B's columns allow
  // 16-byte loads, the rest (or everything) element by element.
  constexpr int STEP = 128 * UC;
  const int k_whole = B.vectorizes<sgemm::COL_MAJOR>() ? K / STEP * STEP : 0;

  for (int g = 0; g < COL_GROUPS; ++g) {
    const int col = t.col0 + (warp * COL_GROUPS + g) * 4;
    // Columns past N repeat column N - 1 (in bounds, never stored).
    const float* b_col[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) b_col[j] = B.p + min(col + j, t.N - 1) * B.cs;

    float acc[BLOCK_M * 4] = {};  // acc[4 r + j]: row r, column j
    auto load_cols = [&](int k, float4 (&bv)[UC][4]) {
#pragma unroll
      for (int u = 0; u < UC; ++u)
#pragma unroll
        for (int j = 0; j < 4; ++j) bv[u][j] = load_b(b_col[j] + k + 128 * u);
    };
    for (int k = 4 * lane; k < k_whole; k += STEP) {
      float4 bv[UC][4];
      load_cols(k, bv);
#pragma unroll
      for (int r = 0; r < BLOCK_M; ++r) {
#pragma unroll
        for (int u = 0; u < UC; ++u) {
          const int kk = k + 128 * u;
          const float4 av = AV ? __ldg(reinterpret_cast<const float4*>(a_row[r] + kk))
                               : make_float4(a_row[r][kk * A.cs], a_row[r][(kk + 1) * A.cs],
                                             a_row[r][(kk + 2) * A.cs], a_row[r][(kk + 3) * A.cs]);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            float& s = acc[4 * r + j];
            s += av.x * bv[u][j].x;
            s += av.y * bv[u][j].y;
            s += av.z * bv[u][j].z;
            s += av.w * bv[u][j].w;
          }
        }
      }
    }
    for (int k = k_whole + lane; k < K; k += 32) {
      float bv[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = b_col[j][k * B.rs];
#pragma unroll
      for (int r = 0; r < BLOCK_M; ++r) {
        const float av = a_row[r][k * A.cs];
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[4 * r + j] += av * bv[j];
      }
    }

    // Lane i ends with the whole sum of acc[i]: row i / 4, column i % 4.
    const float sum = sgemm::warp_sum_spread(acc);
    const int r = t.row0 + lane / 4, cc = col + lane % 4;
    if (r < t.M && cc < t.N) t.C[r * t.ldc + cc] = sum;
  }
};

sgemm::with_flag(t.A.vectorizes<sgemm::ROW_MAJOR>(), [&](auto a_vector) {
  if (t.B.layout() == sgemm::COL_MAJOR) col_major(a_vector);
  else row_major(a_vector);
});
