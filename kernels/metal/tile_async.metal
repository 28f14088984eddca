#include "sgemm/async_copy.h"
#include "sgemm/epilogue.h"
#include "sgemm/schedule.h"
#include "sgemm/simdgroup.h"
// Stage 5, tile_async (and gemm, C = alpha A B + beta C_in): the kernel of
// Fast Matrix Multiply on an Apple GPU.
// One simdgroup fetches each k-tile of A and B with simdgroup_async_copy (that
// post measured one loading simdgroup to be faster than all of them), while
// SW x SW simdgroups multiply, each SIMD_TILE x SIMD_TILE 8x8 accumulators:
// its best, sigma = SW = 2 and s = SIMD_TILE = 4, is a 64x64 block from
// 128 threads, and its TILE_K = 2 (8x8 matrices) is TILE_K = 16 here (elements).
//
// Beyond the post:
// * Double buffering: the copy of k-tile kt + 1 runs into one pair of buffers
//   while the simdgroups multiply k-tile kt from the other. One barrier per
//   k-tile: when it completes, the copy of kt + 1 has been waited on, and
//   everyone has finished reading kt's buffers, which the next copy reuses.
// * Any M, N, K: the async copy reads only the part of a k-tile inside the
//   matrix and fills the rest of the buffer with zeros; blocks of C that
//   overhang the edge are stored through threadgroup memory (sgemm::store_8x8).
// * Any layout: operands that are not row-major with rows 16 bytes apart, or
//   that MLX passes in `constant` memory, are copied element by element by all
//   threads into the same buffers (sgemm::copy_tile), still double buffered.
// * Half operands (both float16, or both bfloat16): the async copy moves their
//   bytes as they are into tiles of their own type, which the simdgroup matrices
//   read and multiply into the float32 accumulators (sgemm::TileElement, as
//   MLX's steel GEMM does); no cast first. A mixed pair is cast to float32 in
//   MLX first (mlx_sgemm/build/specs.py).
// * SGEMM_ALPHA_BETA (the gemm spec): C = alpha A B + beta C_in, with c_in
//   row-major in the shape of c and scalars = [alpha, beta].
constexpr int SG_TILE = 8 * SIMD_TILE;  // one simdgroup's square of C
constexpr int BM = SW * SG_TILE, BN = SW * SG_TILE;  // the spec's block_m x block_n
constexpr int THREADS = 32 * SW * SW;  // the spec's threadgroup

using T = sgemm::TileElement<decltype(a), decltype(b)>;
threadgroup T As[2][BM][TILE_K];
threadgroup T Bs[2][TILE_K][BN];
threadgroup float Cs[SW * SW][8][8];  // each simdgroup's staging for edge stores

const auto t = sgemm::locate_tile(
    BM, BN, threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tid = int(thread_index_in_threadgroup);
const int sg = int(simdgroup_index_in_threadgroup);
const int lane = int(thread_index_in_simdgroup);
const int sm = (sg / SW) * SG_TILE;  // this simdgroup's square of the block
const int sn = (sg % SW) * SG_TILE;

simdgroup_float8x8 acc[SIMD_TILE][SIMD_TILE];
sgemm::clear(acc);

const bool a_async = sgemm::async_copyable(t.A);  // the same in every thread
const bool b_async = sgemm::async_copyable(t.B);
thread _simdgroup_event_t* events[2];  // simdgroup 0's copies in flight
const int k_tiles = (t.K + TILE_K - 1) / TILE_K;

// k-tile 0 into buffers 0.
int copies = sgemm::copy_tile<TILE_K>(As[0], t.A, t.row0, 0, a_async, &events[0], sg, tid,
                                      THREADS);
copies += sgemm::copy_tile<BN>(Bs[0], t.B, 0, t.col0, b_async, &events[copies], sg, tid,
                               THREADS);
if (sg == 0 && copies > 0) __metal_wait_simdgroup_events(copies, events);
threadgroup_barrier(mem_flags::mem_threadgroup);  // k-tile 0 is complete

for (int kt = 0; kt < k_tiles; ++kt) {
  const int cur = kt % 2;
  const int next = cur ^ 1;
  // Start k-tile kt + 1 into the other buffers (nobody reads them any more:
  // the barrier at the end of the previous k-tile).
  copies = 0;
  if (kt + 1 < k_tiles) {
    const int k0 = (kt + 1) * TILE_K;
    copies = sgemm::copy_tile<TILE_K>(As[next], t.A, t.row0, k0, a_async, &events[0], sg, tid,
                                      THREADS);
    copies += sgemm::copy_tile<BN>(Bs[next], t.B, k0, t.col0, b_async, &events[copies], sg,
                                   tid, THREADS);
  }

  sgemm::multiply_k_tile(acc, As[cur], Bs[cur], sm, sn);

  if (sg == 0 && copies > 0) __metal_wait_simdgroup_events(copies, events);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // kt + 1 complete, kt's buffers free
}

#ifdef SGEMM_ALPHA_BETA
const sgemm::AlphaBetaStore<decltype(c_in)> epilogue{c_in + t.c_offset, scalars[0], scalars[1]};
#else
const sgemm::PlainStore epilogue{};
#endif
sgemm::store_accumulators(acc, Cs[sg], t, sm, sn, lane, epilogue);
