#include "sgemm/dispatch.cuh"
#include "sgemm/epilogue.cuh"
#include "sgemm/gemv_fragments.cuh"
#include "sgemm/gemv_one_row.cuh"
#include "sgemm/mma_half.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/params.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/streamed_load.cuh"
// half_gemv: C = A @ B for a few rows of A (M <= 8: a token's activations
// against a weight matrix) when both are float16 or both bfloat16, on the
// tensor cores (mma.sync m16n8k16, sm_80 on), float32 accumulators, C rounded
// once to TC (the operands' type, or float32 for gemm).
//
// Why the tensor cores for a product bound by reading B: each element of B
// meets M elements of A. In FMAs that is M conversions and M FMAs per
// element of B, which at 8 rows asks more of an SM than the bytes do
// (small_m); one mma.sync takes 16 columns x 16 k of B against all 8 rows at
// once, so the arithmetic stays far below the memory's pace at any M <= 8, and
// what is left is keeping enough bytes of B in flight.
//
// The products C^T = B^T A^T: B^T's 16 x 16 tiles are mma's A operand (16
// columns of C by 16 k), A^T its B operand (16 k by the 8 rows of C, rows past
// M zero). A dot product adds over k in any order, so the k's of a fragment may
// be any 16 of K as long as both operands' fragments name the same ones; and
// which column of C a fragment row stands for is ours to pick too. Both are
// chosen so that each lane reads runs of B as they lie in memory, straight
// into the registers mma takes, with no shared memory:
// - column-major B (x @ W.T, B a transposed view: nn.Linear's layout): k is
//   contiguous. A chunk is 32 k: lane (g, q) = (lane / 4, lane % 4) reads 16
//   bytes (8 k) at k = 8 q of rows g and g + 8 of each 16-column tile, and 16
//   bytes of A's row g at the same k; the first 4 of the 8 feed one mma and the
//   last 4 the next (fragment k 2q, 2q + 1 <- 8q + 4s + 0, 1 and 2q + 8, 2q + 9
//   <- 8q + 4s + 2, 3 for step s). Fragment row g of tile j is column 16 j + g.
// - row-major B (x @ W): columns are contiguous. A chunk is 16 k: lane (g, q)
//   reads, at each of the 4 rows k = 4q .. 4q + 3, the 2 NT columns 2 NT g ..
//   and pairs them by byte permutes into (k, k + 1) halves of one column;
//   fragment rows g and g + 8 of tile j are columns 2 NT g + 2j and + 1.
//   A's row g gives 8 bytes at k = 4q.
// A is read through L1 (a few KB, read by every warp of every block); B by
// sgemm::load_streamed, past L1, with L2 fetching 256 bytes a request.
//
// Block: BN = 16 NT columns of C, BLOCK_M = 8 rows, WARPS warps that take
// turns down K a chunk each (warp w: chunks w, w + WARPS, ...), each warp
// loading 2 IN_FLIGHT chunks ahead (a chunk is NT KB of column-major B, NT / 2
// KB of row-major B; as walk says below). The warps' partial sums meet in
// shared memory (store_slot_sums adds them in a fixed order: deterministic).
// A column past N reads column N - 1 (row-major: the first run), in bounds
// and never stored, so whole chunks take plain vector loads.
// The last partial chunk, and operands whose strides or alignment allow no
// such load, are read element by element with zeros outside (same fragments,
// slow, correct for any layout), by functions of their own
// (sgemm/gemv_fragments.cuh): inlined, their registers would cap the warps an
// SM holds, which is what keeps bytes in flight.
//
// One row of A (M = 1) against column-major B goes another way: a lane's
// fragments would be 7 rows of zeros, and its loads 16 columns' 64-byte pieces;
// instead each warp takes BN / WARPS whole columns of the block's, reading 512
// contiguous bytes of a column a load, FMAs in float32, its lanes' sums added
// by shuffles (sgemm::one_row_column_sums, half_gemv_one_row's way for a layer's
// token). The grid is the same, so the host, which cannot tell x @ W.T from
// x @ W, sends either layout here.
//
// Template constants (mlx_sgemm/build/specs.py, cuda_half_gemv): NT, WARPS
// (threads = 32 WARPS = the spec's threadgroup), IN_FLIGHT (as above),
// ONE_ROW (loads of B in flight a lane on the one-row way; 0: no such way),
// TA = TB (the half type), TC (C's type).
constexpr int BLOCK_M = 8;   // rows of C per block (= the spec's block_m)
constexpr int BN = 16 * NT;  // columns of C per block (= the spec's block_n)
constexpr int THREADS = 32 * WARPS;
using T = TA;
static_assert(sizeof(TA) == 2 && sizeof(TB) == 2, "one half type for both operands");

__shared__ float slots[WARPS][BLOCK_M][BN];  // each warp's partial sums

const auto t = sgemm::locate_tile(BLOCK_M, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);

// The grid and thread count come from the spec; one that disagrees with this
// template gets NaN, not a partly written C.
if (blockDim.x != THREADS || params[sgemm::P_TILES_N] != (t.N + BN - 1) / BN) {
  sgemm::write_nan_tile<BLOCK_M, BN>(t);
  return;
}

const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int g = lane / 4, q = lane % 4;
const int K = t.K;
const int rows = min(BLOCK_M, t.M - t.row0);  // rows of C in this tile
const sgemm::Operand<TA> A = t.A;
const sgemm::Operand<TB> B = t.B;
const bool a_row = g < rows;  // this lane's row of A (the fragment's column of A^T) is in the matrix
const TA* const a_line = A.p + (t.row0 + (a_row ? g : 0)) * A.rs;

const int a_index = a_row ? t.row0 + g : -1;  // for the element path

float acc[NT][4] = {};

// Chunk by chunk down this warp's share of K (warp w: chunks w, w + WARPS,
// ...): the full chunks by vector loads where `vector`, then what is left
// (every chunk where not `vector`, else the last partial one) element by
// element, each element checked. load(frag, k0, fast) fills a chunk's
// fragments (fast: an IntTag, 1 for vector loads), multiply(frag) takes its
// products. The full chunks go one of two ways, each the faster for its
// layout as measured (H200, bfloat16, 1x14336x4096, blocks of 8 warps:
// docs/performance-log.md, "half_gemv: a ring of chunks for x @ W.T"; with
// blocks of 4 and of 16 warps the ring lost again on row-major B, 46 and 49
// us against 31: "half_gemv: row-major W on a ring again"):
// - a ring (column-major B: 30.8 us against 32.2 for sets): slot s of S =
//   2 IN_FLIGHT holds this warp's chunk c0 + s WARPS of the round from c0 and
//   is loaded again with the next round's as soon as its products are taken,
//   so a warp waiting on one slot has every other slot's loads in flight;
// - sets (row-major B: 36.5 us against 46 for a ring of 4 or 8 slots): U =
//   2 IN_FLIGHT chunks loaded at once, the next set's loads out before this
//   set's products. The copy of the next set into the registers the products
//   read waits on its loads, so at that point one set is in flight, not two.
auto walk = [&](auto chunk_k, auto fragment, auto ring, bool vector, auto load, auto multiply) {
  constexpr int KC = decltype(chunk_k)::value;
  constexpr int S = 2 * IN_FLIGHT;  // chunks a warp loads ahead
  using Fragment = decltype(fragment);
  const int chunks = K / KC;
  auto full_chunks = [&] {  // by vector loads
    constexpr sgemm::IntTag<1> fast{};
    auto load_from = [&](Fragment (&f)[S], int c0) {  // this warp's S chunks from c0 (those inside K)
#pragma unroll
      for (int s = 0; s < S; ++s)
        if (c0 + s * WARPS < chunks) load(f[s], (c0 + s * WARPS) * KC, fast);
    };
    Fragment f[S];
    load_from(f, warp);
    if constexpr (decltype(ring)::value) {
#pragma unroll 1  // a round at a time: the slots' registers stay fixed
      for (int c0 = warp; c0 < chunks; c0 += WARPS * S) {
#pragma unroll
        for (int s = 0; s < S; ++s) {
          const int c = c0 + s * WARPS, next = c + WARPS * S;
          if (c < chunks) multiply(f[s]);
          if (next < chunks) load(f[s], next * KC, fast);
        }
      }
    } else {
      Fragment next[S];
#pragma unroll 1
      for (int c0 = warp; c0 < chunks; c0 += WARPS * S) {
        load_from(next, c0 + WARPS * S);
#pragma unroll
        for (int s = 0; s < S; ++s) {
          if (c0 + s * WARPS < chunks) multiply(f[s]);
          f[s] = next[s];
        }
      }
    }
  };
  if (vector) full_chunks();
  // The rest one chunk at a time (across the element path's calls there is
  // little to keep), from this warp's first chunk past those done.
  const int done = vector ? chunks : 0;  // chunks taken by vector loads
  for (int c = done + (warp - done % WARPS + WARPS) % WARPS; c * KC < K; c += WARPS) {
    Fragment f;
    load(f, c * KC, sgemm::IntTag<0>{});
    multiply(f);
  }
};

// Column-major B: a column of B (a row of W) is contiguous.
using ColFragment = sgemm::ColFragment<NT>;
auto col_major = [&] {
  const bool vector = B.rs == 1 && B.cs % 8 == 0 && sgemm::is_16_byte_aligned(B.p) && A.cs == 1 &&
                      A.rs % 8 == 0 && sgemm::is_16_byte_aligned(A.p);
  // Fragment row h of tile j stands for column col0 + 16 j + g + 8 h of C; a
  // column past N reads column N - 1 (in bounds, never stored).
  const TB* b_line[NT][2];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) b_line[j][h] = B.p + min(t.col0 + 16 * j + g + 8 * h, t.N - 1) * B.cs;
  auto load = [&](ColFragment& f, int k0, auto fast) {
    const int k = k0 + 8 * q;
    if constexpr (decltype(fast)::value) {
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) f.b[j][h] = sgemm::load_streamed<uint4>(b_line[j][h] + k);
      f.a = a_row ? __ldg(reinterpret_cast<const uint4*>(a_line + k)) : make_uint4(0, 0, 0, 0);
    } else {
      f = sgemm::col_fragment_by_elements<NT>(A, B, a_index, k, t.col0 + g);
    }
  };
  auto multiply = [&](const ColFragment& f) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint32_t s0[4] = {f.b[j][0].x, f.b[j][1].x, f.b[j][0].y, f.b[j][1].y};
      const uint32_t s1[4] = {f.b[j][0].z, f.b[j][1].z, f.b[j][0].w, f.b[j][1].w};
      sgemm::mma_m16n8k16_half<T>(acc[j], s0, f.a.x, f.a.y);
      sgemm::mma_m16n8k16_half<T>(acc[j], s1, f.a.z, f.a.w);
    }
  };
  walk(sgemm::IntTag<32>{}, ColFragment{}, sgemm::IntTag<1>{}, vector, load, multiply);
  // d0 (row g, column 2q of the fragment), d1 (g, 2q + 1), d2 (g + 8, 2q), d3 (g + 8, 2q + 1):
  // columns of C by fragment row, rows of C by fragment column.
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) slots[warp][2 * q + e % 2][16 * j + g + 8 * (e / 2)] = acc[j][e];
};

// Row-major B: a row of B is contiguous. A run is the 2 NT columns of one row
// of B that lane g reads (one load).
using RowFragment = sgemm::RowFragment<NT>;
using Run = typename RowFragment::Run;
auto row_major = [&] {
  const bool vector = B.cs == 1 && B.rs % (2 * NT) == 0 && t.N % (2 * NT) == 0 &&
                      sgemm::is_aligned<sizeof(Run)>(B.p) && A.cs == 1 && A.rs % 4 == 0 &&
                      sgemm::is_aligned<8>(A.p);
  const int col = t.col0 + 2 * NT * g;  // this lane's first column
  const TB* const b_run = B.p + (col < t.N ? col : 0);  // a run past N reads the first: never stored
  auto load = [&](RowFragment& f, int k0, auto fast) {
    const int k = k0 + 4 * q;
    if constexpr (decltype(fast)::value) {
#pragma unroll
      for (int r = 0; r < 4; ++r) f.b[r] = sgemm::load_streamed<Run>(b_run + (k + r) * B.rs);
      f.a = a_row ? __ldg(reinterpret_cast<const uint2*>(a_line + k)) : make_uint2(0, 0);
    } else {
      f = sgemm::row_fragment_by_elements<NT>(A, B, a_index, k, col);
    }
  };
  auto multiply = [&](const RowFragment& f) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      // Word j of a run holds columns 2j, 2j + 1; a fragment register wants
      // one column at rows (k, k + 1): the low halves of two rows' words, or
      // the high halves.
      const uint32_t w[4] = {reinterpret_cast<const uint32_t*>(&f.b[0])[j],
                             reinterpret_cast<const uint32_t*>(&f.b[1])[j],
                             reinterpret_cast<const uint32_t*>(&f.b[2])[j],
                             reinterpret_cast<const uint32_t*>(&f.b[3])[j]};
      const uint32_t s[4] = {__byte_perm(w[0], w[1], 0x5410), __byte_perm(w[0], w[1], 0x7632),
                             __byte_perm(w[2], w[3], 0x5410), __byte_perm(w[2], w[3], 0x7632)};
      sgemm::mma_m16n8k16_half<T>(acc[j], s, f.a.x, f.a.y);
    }
  };
  walk(sgemm::IntTag<16>{}, RowFragment{}, sgemm::IntTag<0>{}, vector, load, multiply);
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) slots[warp][2 * q + e % 2][2 * NT * g + 2 * j + e / 2] = acc[j][e];
};

// One row of A against column-major B: a warp BN / WARPS whole columns.
auto one_row = [&] {
  if constexpr (ONE_ROW > 0 && BN % WARPS == 0) {
    const TA* const x = A.p + t.row0 * A.rs;
    if (t.M == 1 && B.rs == 1 && B.cs % 8 == 0 && sgemm::is_16_byte_aligned(B.p) && A.cs == 1 &&
        sgemm::is_16_byte_aligned(x)) {
      sgemm::one_row_warp_columns<BN / WARPS, ONE_ROW>(B, x, K, t.N, t.col0 + BN / WARPS * warp,
                                                        t.C + t.row0 * t.ldc);
      return true;
    }
  }
  return false;
};

if (B.layout() == sgemm::COL_MAJOR) {
  if (one_row()) return;  // the whole block (M and the layout are the grid's)
  col_major();
} else {
  row_major();
}

// The warps' sums, added in order, stored.
__syncthreads();
sgemm::store_slot_sums<BLOCK_M, BN, THREADS>(t, &slots[0][0][0], WARPS, rows);
