#include "sgemm/bulk_ring.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/epilogue.cuh"
#include "sgemm/half_tiles.cuh"
#include "sgemm/params.cuh"
#include "sgemm/producer_consumer.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/tma.cuh"
#include "sgemm/wgmma.cuh"
// Chapter 8: float16 and bfloat16 operands on Hopper's tensor cores as they are
// (wgmma, f16 x f16 or bf16 x bf16 -> float32), the result rounded once to TC
// (the operands' type, or float32 for split-K's partial sums and gemm).
//
// What the float32 chapters built around the tensor cores falls away: no split
// into parts, no conversion on load, no scaling. A k-tile is 64 elements of k,
// 128 bytes of a line, which the TMA copies as it lies in memory into wgmma's
// 128-byte swizzle (sgemm::HalfKTile): K-major where k is contiguous (a
// row-major A, W^T of x @ W.T read in place), MN-major where rows or columns
// are (a row-major B, a transposed A), which 16-bit wgmma reads transposed
// (TRANS_A, TRANS_B) where TF32 could not. Both operands come from shared
// memory by descriptor.
//
// Block: BM x BN of C (BM 64 or 128, BN 128 or 256; 192 with BM 128), 384
// threads, the float16 split's products' shape (sgemm::BulkRing): a producer
// warpgroup, one of whose threads keeps STAGES k-tiles of A and B in flight,
// and two consumer warpgroups, each a 64-row x WN part of the block (BM =
// 128: the two halves of its rows; BM = 64: the two halves of its columns),
// m64nWNk16 products accumulated by the tensor cores across K in float32, one
// k-tile's products in flight while the next one's wait. The grid has P
// blocks a matrix (params[P_BLOCKS_PER_MATRIX]), each taking tiles
// blockIdx.x % P, + P, ... of its matrix: a persistent block's ring runs on
// into the next tile while the consumers store the last one's outputs.
//
// Operands the TMA cannot take (strides of no tensor map, rows not 16-byte
// aligned, a map the host could not make) are written into the same tiles
// element by element by the whole producer warpgroup: slow, and correct for
// any layout.
static_assert(BM == 64 || BM == 128, "two consumer warpgroups of 64 rows, or of half the columns");
static_assert(BN == 128 || BN == 256 || (BM == 128 && BN == 192), "m64n64, m64n128, m64n192 or m64n256 products");
constexpr int WN = BM == 128 ? BN : BN / 2;  // a consumer's columns
constexpr int ACC = WN / 2;
using ATile = sgemm::HalfKTile<BM>;
using BTile = sgemm::HalfKTile<BN>;
constexpr int STAGE_BYTES = ATile::BYTES + BTile::BYTES;
constexpr int K_STEPS = sgemm::HALF_K_TILE / 16;
using Ring = sgemm::BulkRing<STAGES, STAGE_BYTES, 2>;
constexpr int PRODUCERS_BARRIER = 1;
extern __shared__ int4 smem_int4[];
__shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
__shared__ __align__(128) uint4 map_scratch[2][8];  // A's map, B's

const int tiles = params[sgemm::P_TILES_M] * params[sgemm::P_TILES_N];
const int blocks_per_matrix = params[sgemm::P_BLOCKS_PER_MATRIX];
const int matrix = blockIdx.x / blocks_per_matrix;
auto tile_at = [&](int tile) {
  return sgemm::tile_of<GROUP_M>(matrix, tile, BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
};
const auto first = tile_at(blockIdx.x % blocks_per_matrix);
const int M = params[sgemm::P_M], N = params[sgemm::P_N], K_FULL = params[sgemm::P_K];

// Which way each operand lies (A's lines are its rows, B's its columns: B^T),
// and whether the TMA copies it: the host's maps describe contiguous
// matrices (rows K, M, N or K elements apart), from the matrix's k = 0
// (split-K blocks copy from k0 on).
const sgemm::Operand<TA> a_lines = first.A;
const sgemm::Operand<TB> b_lines = first.B.transposed();
const bool a_mn = a_lines.cs != 1 && a_lines.rs == 1;
const bool b_mn = b_lines.cs != 1 && b_lines.rs == 1;
const int32_t* const maps_in = params + sgemm::P_TENSOR_MAPS;
const int32_t* const a_map_words = maps_in + (a_mn ? 3 : 0) * sgemm::TENSOR_MAP_WORDS;
const int32_t* const b_map_words = maps_in + (b_mn ? 1 : 2) * sgemm::TENSOR_MAP_WORDS;
const TA* const a_origin = a_lines.p - first.k0 * a_lines.cs;
const TB* const b_origin = b_lines.p - first.k0 * b_lines.cs;
const bool a_tma = sgemm::has_tensor_map(a_map_words) && sgemm::is_16_byte_aligned(a_origin) &&
                   (a_mn ? a_lines.cs == M : a_lines.cs == 1 && a_lines.rs == K_FULL);
const bool b_tma = sgemm::has_tensor_map(b_map_words) && sgemm::is_16_byte_aligned(b_origin) &&
                   (b_mn ? b_lines.cs == N : b_lines.cs == 1 && b_lines.rs == K_FULL);
// This block's copies of the maps, with its operands' addresses; the copying
// thread acquires them after the ring's block barrier.
const sgemm::BlockTensorMaps block_maps(maps);
block_maps.publish(map_scratch, a_tma, a_map_words, a_origin, b_tma, b_map_words, b_origin);
const Ring ring(smem_int4, full, empty);

const int warpgroup = threadIdx.x / 128;
if (warpgroup == 0) {
  sgemm::registers_decrease<Ring::PRODUCER_REGISTERS>();
  if (threadIdx.x == 0) block_maps.acquire(a_tma, b_tma);
  const uint32_t tma_bytes = (a_tma ? ATile::BYTES : 0) + (b_tma ? BTile::BYTES : 0);
  const bool all_tma = a_tma && b_tma;
  if (all_tma && threadIdx.x != 0) return;
  int i = 0;  // the ring's step
  for (int tile = blockIdx.x % blocks_per_matrix; tile < tiles; tile += blocks_per_matrix) {
    const auto t = tile_at(tile);
    const int k_tiles = (t.K + sgemm::HALF_K_TILE - 1) / sgemm::HALF_K_TILE;
    for (int kt = 0; kt < k_tiles; ++kt, ++i) {
      const int k = kt * sgemm::HALF_K_TILE;
      int8_t* const stage = ring.stage(i);
      ring.wait_free(i);
      if (!all_tma) {
        if (!a_tma) ATile::fill(stage, a_mn, t.A, t.row0, k, threadIdx.x, 128);
        if (!b_tma) BTile::fill(stage + ATile::BYTES, b_mn, t.B.transposed(), t.col0, k, threadIdx.x, 128);
        sgemm::fence_proxy_async();
        sgemm::barrier_sync(PRODUCERS_BARRIER, 128);
        if (threadIdx.x != 0) continue;
      }
      ring.announce(i, tma_bytes);
      if (a_tma) ATile::copy(stage, a_mn, block_maps.a, t.row0, t.k0 + k, ring.landed(i));
      if (b_tma) BTile::copy(stage + ATile::BYTES, b_mn, block_maps.b, t.col0, t.k0 + k, ring.landed(i));
    }
  }
  return;
}

sgemm::registers_increase<Ring::CONSUMER_REGISTERS>();
const int consumer = warpgroup - 1, tid = threadIdx.x % 128;
const int a_line0 = BM == 128 ? 64 * consumer : 0;   // this consumer's rows of the block
const int b_line0 = BM == 128 ? 0 : WN * consumer;   // and columns
// The k-tiles of this block's tiles, with the transposes compiled in.
auto run = [&](auto a_mn_tag, auto b_mn_tag) {
  constexpr int TRANS_A = decltype(a_mn_tag)::value, TRANS_B = decltype(b_mn_tag)::value;
  int i = 0;
  for (int tile = blockIdx.x % blocks_per_matrix; tile < tiles; tile += blocks_per_matrix) {
    const auto t = tile_at(tile);
    const int k_tiles = (t.K + sgemm::HALF_K_TILE - 1) / sgemm::HALF_K_TILE;
    float acc[ACC];
#pragma unroll
    for (int j = 0; j < ACC; ++j) acc[j] = 0.0f;
    for (int kt = 0; kt < k_tiles; ++kt, ++i) {
      const int8_t* const stage = ring.consume(i);
      sgemm::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < K_STEPS; ++ks) {
        sgemm::wgmma_half_ss<TA, WN, TRANS_A, TRANS_B>(
            acc, ATile::descriptor(stage, TRANS_A, a_line0, ks),
            BTile::descriptor(stage + ATile::BYTES, TRANS_B, b_line0, ks), true);
      }
      sgemm::wgmma_commit();
      sgemm::wgmma_wait<1>();  // k-tile kt - 1's products are done: its stage is free
      if (tid == 0 && kt > 0) ring.release(i - 1);
    }
    sgemm::wgmma_wait<0>();
    if (tid == 0 && k_tiles > 0) ring.release(i - 1);

    // acc[4j + e] is row 16 warp + g + 8 (e / 2), column 8j + 2q + e % 2 of
    // the consumer's 64 x WN, rounded once. A 16-bit C whose rows take the
    // block's WN columns whole, 16-byte aligned, gets 16 bytes a lane (its
    // quads trade pairs: sgemm::store_row_blocks); else two neighbouring
    // columns a store.
    const int lane = tid % 32, g = lane / 4, q = lane % 4;
    const int row_base = t.row0 + a_line0 + (tid / 32) * 16 + g;
    const int col_base = t.col0 + b_line0;
    if constexpr (sizeof(TC) == 2) {
      if (col_base + WN <= t.N && t.ldc % 8 == 0 && sgemm::is_16_byte_aligned(t.C)) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row_base + 8 * h;
          uint32_t* const out = reinterpret_cast<uint32_t*>(t.C + static_cast<int64_t>(min(row, t.M - 1)) * t.ldc +
                                                            col_base);
#pragma unroll
          for (int j0 = 0; j0 < ACC / 4; j0 += 4) {
            uint32_t pairs[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              pairs[j] = sgemm::half_pair<TC>(acc[4 * (j0 + j) + 2 * h], acc[4 * (j0 + j) + 2 * h + 1]);
            }
            sgemm::store_row_blocks(out + 4 * j0, pairs, q, row < t.M);
          }
        }
        continue;  // the block's next tile
      }
    }
    const bool pairs = t.N % 2 == 0;  // every pair of columns aligned for one store
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j) {
      const int col = col_base + 8 * j + 2 * q;
      if (col >= t.N) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row_base + 8 * h;
        if (row >= t.M) continue;
        sgemm::store_pair(t.C + static_cast<int64_t>(row) * t.ldc + col, acc[4 * j + 2 * h],
                          acc[4 * j + 2 * h + 1], pairs, col + 1 < t.N);
      }
    }
  }
};
if (a_mn) {
  if (b_mn) run(sgemm::IntTag<1>{}, sgemm::IntTag<1>{}); else run(sgemm::IntTag<1>{}, sgemm::IntTag<0>{});
} else {
  if (b_mn) run(sgemm::IntTag<0>{}, sgemm::IntTag<1>{}); else run(sgemm::IntTag<0>{}, sgemm::IntTag<0>{});
}
