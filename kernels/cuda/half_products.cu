#include "sgemm/bulk_ring.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/int8_tiles.cuh"
#include "sgemm/producer_consumer.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/wgmma.cuh"
// The float16 split (mlx_sgemm/emulation/half_split.py), step 2: C from the
// float16 parts of A's rows and B's columns (half_split.cu) on the float16
// tensor cores (Hopper wgmma, f16 x f16 -> float32), unscaled by the lines'
// powers of two (sgemm::half_shift_of with TOP, as the split scaled them).
// PARTS = 2 (float32 accuracy): small x big + big x small + big x big (small x
// small, ~2^-22 relative, left out), into a fresh accumulator per k-tile that
// the FP32 units add to the running sum, since the tensor cores' adds round
// toward zero. PARTS = 1 (TF32 accuracy): big x big, accumulated by the
// tensor cores across K as TF32's products are, one k-tile's products in
// flight while the consumers wait for the next.
//
// Block: BM x BN = 128 x BN tiles of C, 384 threads: a producer warpgroup
// whose one thread keeps STAGES k-tiles (64 halves of K) of the parts in
// flight in a ring of stages (sgemm::BulkRing), and two consumer warpgroups of
// 64 rows x BN, m64nBNk16 products with both operands read from shared memory.
// (Three consumers, 192 rows, would read fewer bytes a product from L2, but
// 512 threads leave ptxas 128 registers a thread for the whole kernel,
// whatever setmaxnreg hands the consumers later: too few for m64n256's 128
// accumulators.) The grid has a block an SM (half_split.product_blocks), each
// taking tiles blockIdx.x, + gridDim.x, ..: its ring runs on from one tile to
// the next, so that the producer fetches a tile's first k-tiles while the
// consumers unscale and store the last one's outputs.
//
// direct: the float32 fallback's outputs (tile_threads.cu built with
// SGEMM_EMULATION_FALLBACK), taken for the outputs of rows and columns whose
// largest magnitude the statistics give as Inf or NaN: those holding one, and
// those the split did not take (too wide for float16's range; it marks them
// so, sgemm::split_stats).
// params: M, N, k-tiles, tiles in M, tiles in N.
static_assert(PARTS == 1 || PARTS == 2, "big, or big and small");
static_assert(BM == 128, "2 consumer warpgroups of 64 rows");
constexpr int A_BYTES = BM * sgemm::RESIDUE_K_TILE, B_BYTES = BN * sgemm::RESIDUE_K_TILE;
constexpr int STAGE_BYTES = PARTS * (A_BYTES + B_BYTES);
constexpr int K_STEPS = sgemm::RESIDUE_K_TILE / 32;  // k16 products a k-tile
constexpr int ACC = BN / 2;
using Ring = sgemm::BulkRing<STAGES, STAGE_BYTES, 2>;
extern __shared__ int4 smem_int4[];
__shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
// A tile's line shifts (its BM rows', then its BN columns'), for the epilogue,
// in one of two buffers by the parity of the block's tile count.
constexpr int SHIFTS = BM + BN, CONSUMER_THREADS = Ring::THREADS - 128;
constexpr int SHIFTS_PER_THREAD = (SHIFTS + CONSUMER_THREADS - 1) / CONSUMER_THREADS, SHIFTS_BARRIER = 1;
constexpr int PLAIN_SHIFT = 63;  // two such shifts make a normal power of two
__shared__ __align__(8) int tile_shifts[2][SHIFTS];

const int M = params[0], N = params[1], k_tiles = params[2];
const int tiles_m = params[3], tiles_n = params[4], tiles = tiles_m * tiles_n;
const int8_t* const a_parts = reinterpret_cast<const int8_t*>(ah);
const int8_t* const b_parts = reinterpret_cast<const int8_t*>(bh);

const Ring ring(smem_int4, full, empty);

// Step i of the ring: k-tile i % k_tiles of the block's (i / k_tiles)-th tile.
const int warpgroup = threadIdx.x / 128;
if (warpgroup == 0) {
  sgemm::registers_decrease<Ring::PRODUCER_REGISTERS>();
  if (threadIdx.x == 0) {
    int i = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int row0, col0;
      sgemm::tile_origin<GROUP_M>(tile, tiles_m, tiles_n, BM, BN, row0, col0);
      for (int kt = 0; kt < k_tiles; ++kt, ++i) {
        int8_t* const stage = ring.produce(i);
        for (int part = 0; part < PARTS; ++part) {
          sgemm::bulk_copy(stage + part * A_BYTES,
                           a_parts + sgemm::residue_tile_offset(part, row0 / BM, kt, tiles_m, k_tiles, BM), A_BYTES,
                           ring.landed(i));
          sgemm::bulk_copy(stage + PARTS * A_BYTES + part * B_BYTES,
                           b_parts + sgemm::residue_tile_offset(part, col0 / BN, kt, tiles_n, k_tiles, BN), B_BYTES,
                           ring.landed(i));
        }
      }
    }
  }
  return;
}
sgemm::registers_increase<Ring::CONSUMER_REGISTERS>();
const int tid = threadIdx.x % 128;
const int a_offset = (warpgroup - 1) * 64 * sgemm::RESIDUE_K_TILE;  // this warpgroup's 64 rows in a stage
auto issue = [&](float (&d)[ACC], const int8_t* a, const int8_t* b, bool accumulate) {
#pragma unroll
  for (int ks = 0; ks < K_STEPS; ++ks)
    sgemm::wgmma_half_ss<__half, BN>(d, sgemm::wgmma_descriptor<sgemm::ResidueTile>(a + 32 * ks),
                                     sgemm::wgmma_descriptor<sgemm::ResidueTile>(b + 32 * ks), accumulate || ks > 0);
};
int first = 0;  // the ring's step of the tile's first k-tile
for (int tile = blockIdx.x, count = 0; tile < tiles; tile += gridDim.x, first += k_tiles, ++count) {
  int row0, col0;
  sgemm::tile_origin<GROUP_M>(tile, tiles_m, tiles_n, BM, BN, row0, col0);
  // The tile's lines' largest magnitudes, a few a thread, loaded now and used
  // after the products (their latency hidden by them); the shifts then go to
  // shared memory for every consumer. (Each thread reading its own 2 rows'
  // and 64 columns' in the epilogue waited for one load after another: taking
  // them here brought the TF32 products from 300 to 267 us at 4096^3 on an
  // H200.)
  const int consumer_thread = threadIdx.x - 128;
  float largest[SHIFTS_PER_THREAD];
#pragma unroll
  for (int r = 0; r < SHIFTS_PER_THREAD; ++r) {
    const int i = consumer_thread + r * CONSUMER_THREADS;
    largest[r] = i >= SHIFTS ? 0.0f : i < BM ? a_stats[min(row0 + i, M - 1)] : b_stats[min(col0 + i - BM, N - 1)];
  }
  float acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
  if constexpr (PARTS == 1) {
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int8_t* const stage = ring.consume(first + kt);
      sgemm::wgmma_fence();
      issue(acc, stage + a_offset, stage + PARTS * A_BYTES, true);
      sgemm::wgmma_commit();
      sgemm::wgmma_wait<1>();  // k-tile kt - 1's products are done: its stage is free
      if (tid == 0 && kt > 0) ring.release(first + kt - 1);
    }
    sgemm::wgmma_wait<0>();
    if (tid == 0) ring.release(first + k_tiles - 1);
  } else {
    float fresh[ACC];
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int8_t* const stage = ring.consume(first + kt);
      const int8_t* const a_big = stage + a_offset;
      const int8_t* const b_big = stage + PARTS * A_BYTES;
      const int8_t* const a_small = a_big + A_BYTES;
      const int8_t* const b_small = b_big + B_BYTES;
      sgemm::wgmma_fence();
      // The small products first, while the fresh sum is small: each of the
      // tensor cores' truncating adds then loses at most an ulp of a small
      // value, and only the K_STEPS big products' adds an ulp of the k-tile's
      // sum. The first product of the k-tile overwrites `fresh`.
      issue(fresh, a_small, b_big, false);
      issue(fresh, a_big, b_small, true);
      issue(fresh, a_big, b_big, true);
      sgemm::wgmma_commit();
      sgemm::wgmma_wait<0>();
      if (tid == 0) ring.release(first + kt);
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] += fresh[i];
    }
  }

  int* const shifts = tile_shifts[count % 2];
  bool plain_shifts = true;
#pragma unroll
  for (int r = 0; r < SHIFTS_PER_THREAD; ++r) {
    const int i = consumer_thread + r * CONSUMER_THREADS;
    if (i < SHIFTS) {
      const int shift = sgemm::half_shift_of(largest[r], TOP);
      shifts[i] = shift;
      plain_shifts &= shift != sgemm::NON_FINITE_LINE && shift >= -PLAIN_SHIFT && shift <= PLAIN_SHIFT;
    }
  }
  // Every shift of the tile written (and every consumer past the epilogue of
  // tile count - 2, which read this buffer last). A plain tile lies whole
  // inside C (N even: float2 stores), its shifts finite and within
  // +-PLAIN_SHIFT, so that each output is one multiply by a normal power of
  // two: its outputs are stored without a check (with the checks, the
  // epilogue still took ~8 us a tile on an H200: the TF32 products 267 us at
  // 4096^3 against 226 without them).
  const bool plain = sgemm::barrier_sync_and(SHIFTS_BARRIER, CONSUMER_THREADS, plain_shifts) &&
                     row0 + BM <= M && col0 + BN <= N && N % 2 == 0;

  // acc[4j + e] is row 16 warp + g + 8 (e / 2), column 8j + 2t + e % 2 of the
  // warpgroup's 64 x BN: each thread's 2 rows and 2 columns a j.
  const int lane = tid % 32, g = lane / 4, t = lane % 4;
  const int row_base = row0 + (warpgroup - 1) * 64 + (tid / 32) * 16 + g;
  int row_shift[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) row_shift[h] = shifts[row_base + 8 * h - row0];
  auto store_outputs = [&](auto plain_tag) {
    constexpr bool PLAIN = decltype(plain_tag)::value != 0;
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j) {
      const int col = col0 + 8 * j + 2 * t;
      if (!PLAIN && col >= N) continue;
      const int2 col_shift = *reinterpret_cast<const int2*>(shifts + BM + col - col0);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row_base + 8 * h;
        if (!PLAIN && row >= M) continue;
        float pair[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int shift = e == 0 ? col_shift.x : col_shift.y;
          if (!PLAIN && (row_shift[h] == sgemm::NON_FINITE_LINE || shift == sgemm::NON_FINITE_LINE)) {
            // A line holding an Inf or NaN (its parts are zeros), or one the
            // split did not take: the fallback computed this output (its
            // tiles alone), as mx.matmul would.
            pair[e] = direct[static_cast<int64_t>(row) * N + min(col + e, N - 1)];
            continue;
          }
          const int unscale = -(row_shift[h] + shift);
          const float v = acc[4 * j + 2 * h + e];
          pair[e] = PLAIN || (unscale >= -126 && unscale <= 127) ? v * __int_as_float((unscale + 127) << 23)
                                                                  : ldexpf(v, unscale);
        }
        float* const c_row = c + static_cast<int64_t>(row) * N;
        if (PLAIN || (col + 1 < N && N % 2 == 0)) {
          *reinterpret_cast<float2*>(c_row + col) = make_float2(pair[0], pair[1]);
        } else {
          c_row[col] = pair[0];
          if (col + 1 < N) c_row[col + 1] = pair[1];
        }
      }
    }
  };
  if (plain) {
    store_outputs(sgemm::IntTag<1>{});
  } else {
    store_outputs(sgemm::IntTag<0>{});
  }
}
