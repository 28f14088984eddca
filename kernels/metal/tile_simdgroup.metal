#include "sgemm/epilogue.h"
#include "sgemm/load.h"
#include "sgemm/schedule.h"
#include "sgemm/simdgroup.h"
// Stage 4, tile_simdgroup: the matrix units. A simdgroup_float8x8 is an 8x8
// matrix spread over the 32 lanes of a simdgroup (two elements each);
// simdgroup_multiply_accumulate multiplies two of them in one operation of the
// whole simdgroup.
//
// Block: BM x BN outputs per threadgroup of 128 threads = 4 simdgroups, each an
// SG_M x SG_N part held as (SG_M / 8) x (SG_N / 8) accumulators (template
// constants, mlx_sgemm/specs.py). The stage itself is 32x32 in 16x16 quarters:
// every loaded A matrix is used twice, every B matrix twice. With BM = 8 and
// BN = 128 the same code is matmul's small-M variant (Akunu's GEMM chapter's "small" GEMM:
// an 8-row tile, 4 simdgroups side by side along N, 8x32 each), which wastes
// no more than 7 rows when A has few. K advances TILE_K at a time through
// threadgroup memory, loaded by all 128 threads.
//
// Any M, N, K: the tiles are zero-filled outside A and B (zeros add nothing to
// the products), and an 8x8 block that overhangs the edge of C is stored
// through threadgroup memory, from where each lane writes only elements inside
// C (sgemm::store_8x8). (The M2 SGEMM journey's version loads straight from device memory
// and assumes sizes that are multiples of 8.)
//
// Any layout: the operands reach simdgroup_load only through threadgroup
// memory, where sgemm::load_tile has put them row-major whatever their layout
// in device memory (simdgroup_load's transpose flag is therefore not needed).
//
// Half operands: where a and b are both float16 or both bfloat16 the tiles hold
// them as they are, and the simdgroup matrices loaded from them are of that
// type, multiplied into the float32 accumulators (sgemm::TileElement, as MLX's
// steel GEMM keeps half tiles); a mixed pair is converted to float32 on load.
constexpr int THREADS = 128;
constexpr int SG_COLS = BN / SG_N;  // simdgroups side by side along N
static_assert((BM / SG_M) * SG_COLS == THREADS / 32 && SG_M % 8 == 0 && SG_N % 8 == 0,
              "the simdgroups' 8x8-matrix parts tile the block");
static_assert((BM * TILE_K) % THREADS == 0 && (TILE_K * BN) % THREADS == 0,
              "every thread loads the same number of tile elements");

using T = sgemm::TileElement<decltype(a), decltype(b)>;
threadgroup T As[BM][TILE_K];
threadgroup T Bs[TILE_K][BN];
threadgroup float Cs[THREADS / 32][8][8];  // each simdgroup's staging for edge stores

const auto t = sgemm::locate_tile(
    BM, BN, threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tid = int(thread_index_in_threadgroup);
const int sg = int(simdgroup_index_in_threadgroup);
const int lane = int(thread_index_in_simdgroup);
const int sm = (sg / SG_COLS) * SG_M;  // this simdgroup's part of the block
const int sn = (sg % SG_COLS) * SG_N;

simdgroup_float8x8 acc[SG_M / 8][SG_N / 8];
sgemm::clear(acc);

for (int k0 = 0; k0 < t.K; k0 += TILE_K) {
  sgemm::load_tile<TILE_K>(As, t.A, t.row0, k0, tid, THREADS);
  sgemm::load_tile<BN>(Bs, t.B, k0, t.col0, tid, THREADS);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are complete

  sgemm::multiply_k_tile(acc, As, Bs, sm, sn);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone has read them
}

sgemm::store_accumulators(acc, Cs[sg], t, sm, sn, lane, sgemm::PlainStore{});
