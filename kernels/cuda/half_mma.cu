#include "sgemm/async_copy.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/epilogue.cuh"
#include "sgemm/half_tiles.cuh"
#include "sgemm/mma_half.cuh"
#include "sgemm/schedule.cuh"
// Chapter 8 without wgmma (Ampere, Ada; any GPU from sm_80 on): float16 and
// bfloat16 operands on the tensor cores as they are, by mma.sync m16n8k16
// (f16 x f16 or bf16 x bf16 -> float32), the result rounded once to TC (the
// operands' type, or float32 for split-K's partial sums and gemm). The
// classic Ampere GEMM (CUTLASS's sm80 multistage, MLX's steel):
//
// Block: BM x BN of C, 8 warps of (BM / 2) x (BN / 4) (warp tiles of MI x NI
// m16n8 products), a block a tile (sgemm::locate_tile: tile, batch entry and
// K split). K in k-tiles of 64 (sgemm::HALF_K_TILE), a ring of STAGES of them
// in shared memory filled by 16-byte cp.async copies, STAGES - 1 in flight
// while the warps multiply one. The tiles are half_wgmma's (sgemm::HalfKTile,
// the 128-byte swizzle), K-major where k is contiguous (a row-major A, W^T of
// x @ W.T read in place) and MN-major where rows or columns are (a row-major
// B, a transposed A), so that each is copied in 16-byte chunks as it lies;
// ldmatrix reads K-major tiles as they are and MN-major ones transposed
// (ldmatrix .trans), the swizzle keeping both free of bank conflicts.
// Operands whose strides or alignment allow no 16-byte copy are written into
// the same tiles element by element (HalfKTile::copy_async): slow, correct for
// any layout. No setmaxnreg, no TMA: what sm_80 has.
static_assert(BM == 64 || BM == 128, "whole 64-line panels (HalfKTile), 8 warps of 2 x 4");
static_assert(BN == 128 || BN == 256, "whole 64-line panels, warp tiles of an even number of n8 tiles");
static_assert(STAGES >= 2, "a k-tile multiplied while the next lands");
constexpr int THREADS = 256, WARPS_M = 2, WARPS_N = 4;
constexpr int MI = BM / WARPS_M / 16, NI = BN / WARPS_N / 8;
using ATile = sgemm::HalfKTile<BM>;
using BTile = sgemm::HalfKTile<BN>;
constexpr int STAGE_BYTES = ATile::BYTES + BTile::BYTES;
extern __shared__ int4 smem_int4[];
int8_t* const ring = reinterpret_cast<int8_t*>(smem_int4);
const uint32_t ring_shared = static_cast<uint32_t>(__cvta_generic_to_shared(ring));

const auto t = sgemm::locate_tile<GROUP_M>(BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
// Which way each operand lies (A's lines are its rows, B's its columns: B^T),
// and whether its chunks go by cp.async.
const sgemm::Operand<TA> a_lines = t.A;
const sgemm::Operand<TB> b_lines = t.B.transposed();
const bool a_mn = a_lines.cs != 1 && a_lines.rs == 1;
const bool b_mn = b_lines.cs != 1 && b_lines.rs == 1;
const bool a_chunks = ATile::copies_in_chunks(a_mn, a_lines);
const bool b_chunks = BTile::copies_in_chunks(b_mn, b_lines);
const int k_tiles = (t.K + sgemm::HALF_K_TILE - 1) / sgemm::HALF_K_TILE;

// k-tile kt on its way into stage kt % STAGES; one commit group a k-tile,
// empty past the end, so that "at most STAGES - 2 groups pending" always
// means "the oldest k-tile in flight has landed".
auto start = [&](int kt) {
  if (kt < k_tiles) {
    int8_t* const stage = ring + (kt % STAGES) * STAGE_BYTES;
    const int k = kt * sgemm::HALF_K_TILE;
    ATile::copy_async<THREADS>(stage, a_mn, a_lines, t.row0, k, a_chunks, threadIdx.x);
    BTile::copy_async<THREADS>(stage + ATile::BYTES, b_mn, b_lines, t.col0, k, b_chunks, threadIdx.x);
  }
  sgemm::cp_async_commit();
};

const int warp = threadIdx.x / 32;
const int wm0 = (warp / WARPS_N) * (BM / WARPS_M), wn0 = (warp % WARPS_N) * (BN / WARPS_N);
float acc[MI][NI][4];
#pragma unroll
for (int i = 0; i < MI; ++i)
#pragma unroll
  for (int j = 0; j < NI; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

// The k-tiles, with the fragment loads' transposes compiled in.
auto run = [&](auto a_mn_tag, auto b_mn_tag) {
  constexpr int TRANS_A = decltype(a_mn_tag)::value, TRANS_B = decltype(b_mn_tag)::value;
  for (int kt = 0; kt < STAGES - 1; ++kt) start(kt);
  for (int kt = 0; kt < k_tiles; ++kt) {
    sgemm::cp_async_wait<STAGES - 2>();  // this thread's copies of k-tile kt have landed,
    __syncthreads();                     // everyone's, and every warp is done with k-tile kt - 1:
    start(kt + STAGES - 1);              // its stage takes the next k-tile
    const uint32_t stage = ring_shared + (kt % STAGES) * STAGE_BYTES;
    sgemm::warp_tile_mma_half<TA, MI, NI, BM, BN, TRANS_A, TRANS_B>(acc, stage, stage + ATile::BYTES, wm0, wn0);
  }
};
if (a_mn) {
  if (b_mn) run(sgemm::IntTag<1>{}, sgemm::IntTag<1>{}); else run(sgemm::IntTag<1>{}, sgemm::IntTag<0>{});
} else {
  if (b_mn) run(sgemm::IntTag<0>{}, sgemm::IntTag<1>{}); else run(sgemm::IntTag<0>{}, sgemm::IntTag<0>{});
}
sgemm::cp_async_wait<0>();  // no copy outlives the block (the empty groups past the end)

// acc[i][j] is rows 16 i + g (+ 8) and columns 8 j + 2 q, + 1 of the warp's
// tile: two neighbouring columns a store, rounded once.
const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
const bool pairs = t.N % 2 == 0;  // every pair of columns aligned for one store
#pragma unroll
for (int i = 0; i < MI; ++i) {
#pragma unroll
  for (int j = 0; j < NI; ++j) {
    const int col = t.col0 + wn0 + 8 * j + 2 * q;
    if (col >= t.N) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = t.row0 + wm0 + 16 * i + g + 8 * h;
      if (row >= t.M) continue;
      sgemm::store_pair(t.C + static_cast<int64_t>(row) * t.ldc + col, acc[i][j][2 * h], acc[i][j][2 * h + 1],
                        pairs, col + 1 < t.N);
    }
  }
}
