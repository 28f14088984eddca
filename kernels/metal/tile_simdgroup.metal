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
// the products), and an 8x8 block that overhangs the edge of C is stored
// through threadgroup memory, from where each lane writes only elements inside
// C (sgemm::store_8x8). (Seed 000's version loads straight from device memory
// and assumes sizes that are multiples of 8.)
//
// Any layout: the operands reach simdgroup_load only through threadgroup
// memory, where sgemm::load_tile has put them row-major whatever their layout
// in device memory (simdgroup_load's transpose flag is therefore not needed).
constexpr int BM = 32, BN = 32;  // the spec's block_m x block_n
constexpr int SG_M = 16, SG_N = 16;  // one simdgroup's quarter
constexpr int THREADS = 128;
static_assert((BM * TILE_K) % THREADS == 0 && (TILE_K * BN) % THREADS == 0,
              "every thread loads the same number of tile elements");

threadgroup float As[BM][TILE_K];
threadgroup float Bs[TILE_K][BN];
threadgroup float Cs[THREADS / 32][8][8];  // each simdgroup's staging for edge stores

const auto t = sgemm::locate_tile(
    BM, BN, threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tid = int(thread_index_in_threadgroup);
const int sg = int(simdgroup_index_in_threadgroup);
const int lane = int(thread_index_in_simdgroup);
const int sm = (sg / 2) * SG_M;  // this simdgroup's quarter of the block
const int sn = (sg % 2) * SG_N;

simdgroup_float8x8 acc[2][2];
sgemm::clear(acc);

for (int k0 = 0; k0 < t.K; k0 += TILE_K) {
  sgemm::load_tile<TILE_K>(As, t.A, t.row0, k0, tid, THREADS);
  sgemm::load_tile<BN>(Bs, t.B, k0, t.col0, tid, THREADS);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are complete

  sgemm::multiply_k_tile(acc, As, Bs, sm, sn);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone has read them
}

sgemm::store_accumulators(acc, Cs[sg], t, sm, sn, lane, sgemm::PlainStore{});
