#include "sgemm/dispatch.cuh"
#include "sgemm/epilogue.cuh"
#include "sgemm/mma_half.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/params.cuh"
#include "sgemm/schedule.cuh"
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
// A is read through L1 (a few KB, read by every warp of every block).
//
// Block: BN = 16 NT columns of C, BLOCK_M = 8 rows, WARPS warps that take
// turns down K a chunk each (warp w: chunks w, w + WARPS, ...), IN_FLIGHT
// chunks' loads of column-major B in flight a warp (2 KB each), and twice as
// many of row-major B's (1 KB each). Their partial sums meet in shared memory
// (store_slot_sums adds them in a fixed order: deterministic). The chunks
// inside the matrices take plain vector loads; the last partial chunk, a
// column tile past N and operands whose strides or alignment allow no such
// load read element by element with zeros outside (same fragments, slow,
// correct for any layout).
//
// Template constants (mlx_sgemm/build/specs.py, cuda_half_gemv): WARPS
// (threads = 32 WARPS = the spec's threadgroup), IN_FLIGHT (as above),
// TA = TB (the half type), TC (C's type).
constexpr int BLOCK_M = 8;   // rows of C per block (= the spec's block_m)
constexpr int NT = 2;        // 16-column tiles of C per block
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

// Element (r, k) of A or (k, n) of B as its 16 bits, zero outside; two such
// as one register, the first in the low half (the element path).
auto bits = [](auto v) { return static_cast<uint32_t>(*reinterpret_cast<const unsigned short*>(&v)); };
auto a_bits = [&](int k) { return a_row ? bits(A.raw_at(t.row0 + g, k)) : 0u; };
auto b_bits = [&](int k, int n) { return bits(B.raw_at(k, n)); };
auto pair = [](uint32_t lo, uint32_t hi) { return lo | (hi << 16); };

float acc[NT][4] = {};

// Chunk by chunk down this warp's share of K: the full chunks, U in flight,
// by vector loads where `vector` (compiled apart from the element path, so
// that each has the registers to itself), then the last partial one with every
// element checked. load(frag, k0, fast) fills a chunk's fragments (fast: an
// IntTag, 1 for vector loads), multiply(frag) takes its products.
auto walk = [&](auto chunk_k, auto fragment, bool vector, auto load, auto multiply) {
  constexpr int KC = decltype(chunk_k)::value;
  constexpr int U = IN_FLIGHT * 32 / KC;  // a column-major chunk has twice the bytes of a row-major one
  using Fragment = decltype(fragment);
  const int chunks = K / KC;
  auto full_chunks = [&](auto fast) {
    for (int c0 = warp; c0 < chunks; c0 += WARPS * U) {
      Fragment f[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c0 + u * WARPS < chunks) load(f[u], (c0 + u * WARPS) * KC, fast);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c0 + u * WARPS < chunks) multiply(f[u]);
    }
  };
  if (vector) full_chunks(sgemm::IntTag<1>{});
  else full_chunks(sgemm::IntTag<0>{});
  if (chunks * KC < K && warp == chunks % WARPS) {
    Fragment f;
    load(f, chunks * KC, sgemm::IntTag<0>{});
    multiply(f);
  }
};

// Column-major B: a column of B (a row of W) is contiguous.
struct ColFragment {
  uint4 b[NT][2];  // rows g and g + 8 of each tile of B^T: 8 k each
  uint4 a;         // A's row g at the same 8 k
};
auto col_major = [&] {
  const bool vector = B.rs == 1 && B.cs % 8 == 0 && sgemm::is_16_byte_aligned(B.p) && A.cs == 1 &&
                      A.rs % 8 == 0 && sgemm::is_16_byte_aligned(A.p);
  int col[NT][2];  // the columns of C this lane's fragment rows stand for
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) col[j][h] = t.col0 + 16 * j + g + 8 * h;
  auto load = [&](ColFragment& f, int k0, auto fast) {
    const int k = k0 + 8 * q;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (decltype(fast)::value) {  // a column past N reads column N - 1: in bounds, never stored
          f.b[j][h] = *reinterpret_cast<const uint4*>(B.p + min(col[j][h], t.N - 1) * B.cs + k);
        } else {
          uint32_t w[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) w[e] = pair(b_bits(k + 2 * e, col[j][h]), b_bits(k + 2 * e + 1, col[j][h]));
          f.b[j][h] = make_uint4(w[0], w[1], w[2], w[3]);
        }
      }
    if (decltype(fast)::value) {
      f.a = a_row ? __ldg(reinterpret_cast<const uint4*>(a_line + k)) : make_uint4(0, 0, 0, 0);
    } else {
      uint32_t w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) w[e] = pair(a_bits(k + 2 * e), a_bits(k + 2 * e + 1));
      f.a = make_uint4(w[0], w[1], w[2], w[3]);
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
  walk(sgemm::IntTag<32>{}, ColFragment{}, vector, load, multiply);
  // d0 (row g, column 2q of the fragment), d1 (g, 2q + 1), d2 (g + 8, 2q), d3 (g + 8, 2q + 1):
  // columns of C by fragment row, rows of C by fragment column.
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) slots[warp][2 * q + e % 2][16 * j + g + 8 * (e / 2)] = acc[j][e];
};

// Row-major B: a row of B is contiguous. A run is the 2 NT columns of one row
// of B that lane g reads (2 NT halves: NT words).
using Run = uint2;
static_assert(sizeof(Run) == 4 * NT, "a run: NT words of two halves");
struct RowFragment {
  Run b[4];  // rows 4q .. 4q + 3 of the chunk, columns 2 NT g ..
  uint2 a;   // A's row g at those 4 k
};
auto row_major = [&] {
  const bool vector = B.cs == 1 && B.rs % (2 * NT) == 0 && t.N % (2 * NT) == 0 &&
                      sgemm::is_aligned<sizeof(Run)>(B.p) && A.cs == 1 && A.rs % 4 == 0 &&
                      sgemm::is_aligned<8>(A.p);
  const int col = t.col0 + 2 * NT * g;  // this lane's first column
  auto load = [&](RowFragment& f, int k0, auto fast) {
    const int k = k0 + 4 * q;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      if (decltype(fast)::value) {  // a run past N reads the first: in bounds, never stored
        f.b[r] = *reinterpret_cast<const Run*>(B.p + (k + r) * B.rs + (col < t.N ? col : 0));
      } else {
        uint32_t w[NT];
#pragma unroll
        for (int e = 0; e < NT; ++e) w[e] = pair(b_bits(k + r, col + 2 * e), b_bits(k + r, col + 2 * e + 1));
        f.b[r] = *reinterpret_cast<const Run*>(w);
      }
    }
    if (decltype(fast)::value) {
      f.a = a_row ? __ldg(reinterpret_cast<const uint2*>(a_line + k)) : make_uint2(0, 0);
    } else {
      f.a = make_uint2(pair(a_bits(k), a_bits(k + 1)), pair(a_bits(k + 2), a_bits(k + 3)));
    }
  };
  auto multiply = [&](const RowFragment& f) {
    const uint32_t* b0 = reinterpret_cast<const uint32_t*>(&f.b[0]);
    const uint32_t* b1 = reinterpret_cast<const uint32_t*>(&f.b[1]);
    const uint32_t* b2 = reinterpret_cast<const uint32_t*>(&f.b[2]);
    const uint32_t* b3 = reinterpret_cast<const uint32_t*>(&f.b[3]);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      // Word j of a run holds columns 2j, 2j + 1; a fragment register wants
      // one column at rows (k, k + 1): the low halves of two rows' words, or
      // the high halves.
      const uint32_t s[4] = {__byte_perm(b0[j], b1[j], 0x5410), __byte_perm(b0[j], b1[j], 0x7632),
                             __byte_perm(b2[j], b3[j], 0x5410), __byte_perm(b2[j], b3[j], 0x7632)};
      sgemm::mma_m16n8k16_half<T>(acc[j], s, f.a.x, f.a.y);
    }
  };
  walk(sgemm::IntTag<16>{}, RowFragment{}, vector, load, multiply);
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) slots[warp][2 * q + e % 2][2 * NT * g + 2 * j + e / 2] = acc[j][e];
};

if (B.layout() == sgemm::COL_MAJOR) col_major();
else row_major();

// The warps' sums, added in order, stored.
__syncthreads();
sgemm::store_slot_sums<BLOCK_M, BN, THREADS>(t, &slots[0][0][0], WARPS, rows);
