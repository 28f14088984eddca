// Stage 4, tile_simdgroup: the matrix units. A simdgroup_float8x8 is an 8x8
// matrix spread over the 32 lanes of a simdgroup (two elements each);
// simdgroup_multiply_accumulate multiplies two of them in one operation of the
// whole simdgroup.
//
// Block: 32x32 outputs per threadgroup of 128 threads = 4 simdgroups, each a
// 16x16 quarter held as 2x2 accumulators, which reuses every loaded A matrix
// twice and every B matrix twice. K advances TILE_K at a time through
// threadgroup memory, loaded by all 128 threads.
//
// Any M, N, K: the tiles are zero-filled outside A and B (zeros add nothing to
// the products), and a quarter that overhangs the edge of C is stored through
// threadgroup memory, from where each lane writes only elements inside C.
// (Seed 000's version loads straight from device memory and assumes sizes
// that are multiples of 8.)
constexpr int BM = 32, BN = 32;  // the spec's block_m x block_n
constexpr int SG_M = 16, SG_N = 16;  // one simdgroup's quarter
constexpr int THREADS = 128;
static_assert(TILE_K % 8 == 0, "K advances in 8x8 matrices");
static_assert((BM * TILE_K) % THREADS == 0 && (TILE_K * BN) % THREADS == 0,
              "every thread loads the same number of tile elements");

threadgroup float As[BM][TILE_K];
threadgroup float Bs[TILE_K][BN];
threadgroup float Cs[BM][BN];  // staging for quarters that overhang C's edge

const auto t = sgemm::locate_tile(
    BM, BN, threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tid = int(thread_index_in_threadgroup);
const int sg = int(simdgroup_index_in_threadgroup);
const int sm = (sg / 2) * SG_M;  // this simdgroup's quarter of the block
const int sn = (sg % 2) * SG_N;

simdgroup_float8x8 acc[2][2];
for (int i = 0; i < 2; ++i) {
  for (int j = 0; j < 2; ++j) {
    acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
}

for (int k0 = 0; k0 < t.K; k0 += TILE_K) {
  sgemm::load_tile<TILE_K>(As, t.A, t.lda, t.row0, k0, t.M, t.K, tid, THREADS);
  sgemm::load_tile<BN>(Bs, t.B, t.ldb, k0, t.col0, t.K, t.N, tid, THREADS);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are complete

  for (int kk = 0; kk < TILE_K; kk += 8) {
    simdgroup_float8x8 am[2], bm[2];
    for (int i = 0; i < 2; ++i) {
      simdgroup_load(am[i], &As[0][0], TILE_K, ulong2(kk, sm + 8 * i));
    }
    for (int j = 0; j < 2; ++j) {
      simdgroup_load(bm[j], &Bs[0][0], BN, ulong2(sn + 8 * j, kk));
    }
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        simdgroup_multiply_accumulate(acc[i][j], am[i], bm[j], acc[i][j]);
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone has read them
}

// The branches depend only on the simdgroup's quarter, so all 32 lanes take
// the same one, as the collective stores require.
const int row = t.row0 + sm, col = t.col0 + sn;
if (row + SG_M <= t.M && col + SG_N <= t.N) {
  device float* dst = t.C + row * t.ldc + col;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      simdgroup_store(acc[i][j], dst, t.ldc, ulong2(8 * j, 8 * i));
    }
  }
} else if (row < t.M && col < t.N) {
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      simdgroup_store(acc[i][j], &Cs[0][0], BN, ulong2(sn + 8 * j, sm + 8 * i));
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);  // the other lanes' elements are in Cs
  for (int e = int(thread_index_in_simdgroup); e < SG_M * SG_N; e += 32) {
    const int r = e / SG_N, cc = e % SG_N;
    sgemm::store_clipped(t.C, t.ldc, row + r, col + cc, t.M, t.N, Cs[sm + r][sn + cc]);
  }
}
