#include "sgemm/async_copy.cuh"
#include "sgemm/dispatch.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/params.cuh"
#include "sgemm/producer_consumer.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/smem_tile.cuh"
#include "sgemm/swizzled_tile.cuh"
#include "sgemm/tf32.cuh"
#include "sgemm/tma.cuh"
#include "sgemm/wgmma.cuh"
// Specialized for Hopper: warpgroup MMA (wgmma), fed by a producer warpgroup.
//
// The mma.sync kernels are bound by instruction issue, not by the tensor cores
// (docs/performance-log.md, "mma.sync kernels are bound by instruction
// issue"): per m16n8k8 product a thread also loads and splits its fragments.
// A wgmma m64n128k8 does 16 such products for one issue slot and reads one
// operand from shared memory itself. What is left around it (the copies, most
// of the 3xTF32 split) is given to warps of its own, so that it runs beside
// the products instead of between them (in the same warps it cost as much
// time as the products: docs/performance-log.md, "tile_wgmma: producer and
// consumer warpgroups").
//
// TF32 wgmma wants its shared-memory operand K-major. Of C = A B that is A
// (row-major A: its k runs fastest already); B (row-major: its n runs fastest)
// goes through registers instead. So each consumer warpgroup computes a tile
// of C transposed, D = C^T = B^T A^T: B^T's 64 x 8 fragments are loaded from
// shared memory into registers, A's tile is read by the tensor cores.
//
// float32 operands only: cp.async and the TMA move bytes into the tiles that
// wgmma reads as float32 (A straight from shared memory), so half operands are
// cast to float32 (in MLX) first.
//
// Block: BM x 128 of C (below), 384 threads = 3 warpgroups.
// - Warpgroup 0, the producer, copies k-tiles of A and B into a ring of STAGES
//   shared-memory stages with cp.async (A in wgmma's 128-byte swizzled
//   layout, sgemm::SwizzledTile; B in its own orientation, sgemm::SmemTile),
//   keeping LOOKAHEAD k-tiles of copies in flight behind the one it hands
//   over; with SPLIT it splits A's tile in place into big and small parts
//   (3xTF32) before handing it over. It is a single warp per scheduler, so its
//   instruction count is its speed: copies of interior tiles follow a plan
//   made once (sgemm::CopyPlan), not per-copy index arithmetic.
// - Warpgroups 1 and 2, the consumers, each own 64 columns x BM rows of C (one
//   m64nBM accumulator, BM / 2 floats per thread): they split their B
//   fragments in registers and issue the products.
// BM = 128 for big products (256 for TF32: with one accumulator there is room
// for 128 floats a thread, and each k-tile of B serves twice the rows of C,
// which lightens the L2); 64 or 32 when C has only that many rows: the
// products' width is BM, so a short C wastes no tensor work.
// Named barriers pass the stages: FULL(s) when the producer has filled stage s,
// EMPTY(s) when the consumers' products that read it are done. The producer
// gives back registers it does not need, the consumers take them. At the end
// the ring is idle: the consumers stage C's columns there and store whole rows.
//
// TMA (TF32 only): the producer's copies are the TMA's (sgemm::tma_load_2d):
// one thread asks for A's tile and B's 4 panels of each k-tile (B then lies in
// 128-byte-swizzled panels, sgemm::SwizzledPanels), and the consumers wait for
// their bytes on a transaction barrier of the stage (`loaded`). Why: TF32
// runs at the power limit, where every instruction and L2 request costs
// clock; cp.async took ~500 producer instructions a k-tile and a request per
// 16 bytes. Operands the tensor maps do not describe (a transposed A, other
// strides, a map the host could not make) are copied as without TMA. H200,
// 8192^3 run for seconds (benchmarks/power.py): 308 TFLOP/s with cp.async, 318
// with TMA (docs/performance-log.md, "tile_wgmma: A and B by TMA"). A
// multicast to pairs of blocks (thread-block clusters) would be faster still,
// but MLX's CUDA graphs carry a custom kernel's compiled-in cluster shape into
// other kernels (docs/performance-log.md, "TMA multicast pairs and MLX's CUDA
// graphs").
// x @ W.T (B a transposed view of a row-major W): in the TMA kernel the TMA
// copies B^T's rows (W's) into a SwizzledTile like A's, K-major, from which
// the consumers read B^T's fragments as from B's panels. (Both operands read
// by descriptor were 15-19% faster, but the tensor cores would then truncate
// W: docs/performance-log.md, "TF32 rounded to nearest".)
//
// SPLIT (float32 accuracy): small*big + big*small + big*big per k8 step, into
// a fresh accumulator per k-tile that the FP32 units add to the running sum
// (the tensor cores' accumulation rounds toward zero: see warp_tile_mma_split). The
// split does not handle Inf and NaN (sgemm::split_tf32_fast); the block notes
// whether its operands hold any, and then each output is recomputed with plain
// FMAs, as exact as any float32 product. Without SPLIT (TF32): one product per
// step, each operand rounded to nearest TF32 as cuBLAS's TF32 rounds them (the
// tensor cores truncate the float32 they are given, which on data of one sign
// is a bias that grows with K): B's fragments in the consumers' registers; A
// where the TMA copies it (the 256-row blocks) by a pass before the kernel
// (KernelSpec.rounds_a_to_tf32: rounding a 256-row stage in shared memory
// doubled the shared-memory traffic, docs/performance-log.md, "TF32 rounded to
// nearest"), and where the producer copies it by cp.async (blocks of up to 128
// rows, whose A tiles are a half to an eighth of that) in shared memory by the
// producer, as 3xTF32 splits it there: the pass and its launch cost a product
// of a few rows more ("TF32: A rounded where the producer copies it").
constexpr int THREADS = 384;
// setmaxnreg moves registers within what the block was given at launch: 384
// threads x 168 (the most that lets 384 threads fit in 64K). A warpgroup that
// asks for more than the others gave back would wait for ever. 136 for the
// producer (its copy plans; 120 spilled) leaves the consumers 184 (176 spilled).
// With SPLIT ptxas still spills 40 bytes (BM = 128), before setmaxnreg and in
// the epilogue, none in the loops (checked in the SASS).
constexpr int ENTRY_REGISTERS = 168, PRODUCER_REGISTERS = 136;
constexpr int CONSUMER_REGISTERS =
    (THREADS * ENTRY_REGISTERS - 128 * PRODUCER_REGISTERS) / 256 / 8 * 8;
static_assert((BM == 32 || BM == 64 || BM == 128 || BM == 256) && BN == 128,
              "2 consumer warpgroups of m64nBM products");
static_assert(BM <= 128 || !SPLIT, "3xTF32 keeps 2 accumulators: 256 rows would need 256 registers");
static_assert(2 * STAGES + 1 < 16, "named barriers 1..15");
static_assert(LOOKAHEAD >= 1 && LOOKAHEAD < STAGES, "k-tiles in flight behind the one handed over");
static_assert(!IN_FLIGHT || !SPLIT, "3xTF32 adds each k-tile's products to the sum once they are done");
static_assert(!TMA || !SPLIT, "3xTF32 splits A in the producer's hands: cp.async");
// Each k-tile's products go into a fresh accumulator that the FP32 units add
// to the running sum, rounding to nearest, wherever the consumers wait for
// their products every k-tile anyway (all but IN_FLIGHT): the tensor cores'
// own adds round toward zero, so a sum kept in them across all of K drifts
// with K on data of one sign (warp_tile_mma_split). With IN_FLIGHT the sum
// stays in the tensor cores, as cuBLAS's TF32 kernels keep it.
constexpr bool FRESH = !IN_FLIGHT;
static_assert(BM <= 128 || !FRESH, "a fresh accumulator beside the sum: 256 rows would need 256 registers");

using ATile = sgemm::SwizzledTile<BM, BK>;
constexpr int A_FLOATS = ATile::FLOATS;
constexpr int B_FLOATS = sgemm::SmemTile<sgemm::ROW_MAJOR, BK, BN>::MAX_FLOATS;
constexpr int A_PARTS = SPLIT ? 2 : 1;  // A's (big, small) or the one TF32 tile
constexpr int STAGE_FLOATS = A_PARTS * A_FLOATS + B_FLOATS;

// STAGES x (A's parts, B), starting 1024-byte aligned as the swizzled tiles
// must: the spec asks MLX for that much dynamic shared memory and 1 KB more
// (mlx_sgemm/specs.py).
// The offset is added to the shared array itself, not to its address as an
// integer: a pointer derived from a __shared__ array stays one the compiler
// knows is shared, so reads through it are LDS, not generic loads (LD.E),
// which are slower to reach the same memory (docs/performance-log.md,
// "tile_wgmma reads shared memory as shared memory").
extern __shared__ float4 smem_float4[];
float* const smem = reinterpret_cast<float*>(smem_float4) +
                    (1024 - static_cast<uint32_t>(__cvta_generic_to_shared(smem_float4)) % 1024) % 1024 / 4;
auto a_part = [&](int kt, int part) {
  return smem + (kt % STAGES) * STAGE_FLOATS + part * A_FLOATS;
};
auto b_tile = [&](int kt) { return smem + (kt % STAGES) * STAGE_FLOATS + A_PARTS * A_FLOATS; };
auto full = [](int kt) { return 1 + kt % STAGES; };
auto empty = [](int kt) { return 1 + STAGES + kt % STAGES; };
constexpr int PRODUCERS_ONLY = 1 + 2 * STAGES;
__shared__ int saw_non_finite;

const sgemm::Tile<> t = sgemm::locate_tile<GROUP_M>(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int k_tiles = (t.K + BK - 1) / BK;
const int warpgroup = threadIdx.x / 128;

// TMA: which operands the host's tensor maps describe (row-major, rows K
// (A) or N (B) apart, 16-byte aligned); this block's copies of the maps, with
// its operands' addresses, go to its slots in the `maps` output.
__shared__ __align__(8) uint64_t loaded[STAGES];  // stage s's TMA bytes have landed
__shared__ __align__(128) uint4 map_scratch[2][8];  // A's map, B's
const int32_t* const a_map_words = params + sgemm::P_TENSOR_MAPS;
// B's map: of its rows in 32-column panels if B is row-major, of B^T's rows
// (K-major) if B is a transposed view (the third map in params).
const bool b_row_major = t.B.layout() == sgemm::ROW_MAJOR;
const int32_t* const b_map_words = a_map_words + (b_row_major ? 1 : 2) * sgemm::TENSOR_MAP_WORDS;
const bool a_tma = TMA && t.A.cs == 1 && t.A.rs == params[sgemm::P_K] &&
                   t.A.vectorizes<sgemm::ROW_MAJOR>() && sgemm::has_tensor_map(a_map_words);
const bool b_tma = TMA && sgemm::has_tensor_map(b_map_words) &&
                   (b_row_major ? t.B.cs == 1 && t.B.rs == params[sgemm::P_N] && t.B.vectorizes<sgemm::ROW_MAJOR>()
                                : t.B.rs == 1 && t.B.cs == params[sgemm::P_K] && t.B.vectorizes<sgemm::COL_MAJOR>());
const bool uses_tma = a_tma || b_tma;
// The maps point at this batch entry's operands from k = 0 (split-K blocks
// copy from k0 on); thread 0, which copies, acquires them after the block
// barrier below.
#if defined(SGEMM_TENSOR_MAPS)
const sgemm::BlockTensorMaps block_maps(maps);
#else
const sgemm::BlockTensorMaps block_maps(nullptr);
#endif
block_maps.publish(map_scratch, a_tma, a_map_words, t.A.p - t.k0, b_tma, b_map_words, t.B.p - t.k0 * t.B.rs);
if (threadIdx.x == 0) {
  saw_non_finite = 0;
  if (uses_tma) {
    for (int s = 0; s < STAGES; ++s) sgemm::mbarrier_init(&loaded[s], 1);
    sgemm::mbarrier_init_fence();
  }
}
__syncthreads();
if (threadIdx.x == 0) block_maps.acquire(a_tma, b_tma);
float probe = 0.0f;  // NaN once this thread has seen an Inf or NaN

if (warpgroup == 0) {
  // The producer. Copies are compiled per layout pair: 16-byte copies along
  // each operand's contiguous direction, consecutive threads on consecutive
  // addresses; 4-byte copies where strides forbid 16 bytes.
  sgemm::registers_decrease<PRODUCER_REGISTERS>();
  sgemm::with_layouts(t.A, t.B, [&](auto a_layout, auto b_layout) {
    constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
    using BStage = sgemm::WgmmaBStage<TMA, BL, BK, BN>;  // where B's k-tile goes
    // Tiles wholly inside their operand (all but the edge blocks and a last
    // partial k-tile) are copied by a plan made once (sgemm::CopyPlan).
    const bool a_whole = AL == sgemm::ROW_MAJOR && t.row0 + BM <= t.M &&
                         t.A.vectorizes<sgemm::ROW_MAJOR>();
    const bool b_whole = t.col0 + BN <= t.N && t.B.vectorizes<BL>();
    const auto a_plan = sgemm::CopyPlan::of<ATile, 128>(t.A, t.row0, 0, BK * t.A.cs);
    const auto b_plan = sgemm::CopyPlan::of<sgemm::SmemTile<BL, BK, BN>, 128>(t.B, 0, t.col0, BK * t.B.rs);
    // Iteration kt starts the copy of k-tile kt and hands over k-tile kt -
    // LOOKAHEAD: that many k-tiles' copies stay in flight behind it.
    for (int kt = 0; kt < k_tiles + LOOKAHEAD; ++kt) {
      if (kt < k_tiles) {
        // Stage kt % STAGES is free once the products of k-tile kt - STAGES are done.
        if (kt >= STAGES) sgemm::barrier_sync(empty(kt), THREADS);
        const bool whole_k = (kt + 1) * BK <= t.K;
        if (uses_tma && threadIdx.x == 0) {
          // Zeros outside the operands, as the copies below; a box's bytes
          // count in full even where it overhangs.
          uint64_t* const bar = &loaded[kt % STAGES];
          const int k = t.k0 + kt * BK;
          sgemm::mbarrier_arrive_expect_bytes(bar, 4 * ((a_tma ? A_FLOATS : 0) + (b_tma ? BK * BN : 0)));
          if (a_tma) sgemm::tma_load_2d(a_part(kt, 0), block_maps.a, k, t.row0, bar);
          if (b_tma && b_row_major) {
#pragma unroll
            for (int p = 0; p < BN / 32; ++p) {
              sgemm::tma_load_2d(b_tile(kt) + p * BK * 32, block_maps.b, t.col0 + 32 * p, k, bar);
            }
          } else if (b_tma) {
            sgemm::tma_load_2d(b_tile(kt), block_maps.b, k, t.col0, bar);  // B^T's BN rows
          }
        }
        if (!a_tma) {
          if (a_whole && whole_k) {
            a_plan.copy<A_FLOATS / 4 / 128>(a_part(kt, 0), kt);
          } else {
            sgemm::cp_async_swizzled_tile<BM, BK, 128, AL>(a_part(kt, 0), t.A, t.row0, kt * BK);
          }
        }
        if constexpr (BStage::PANELS) {
          if (!b_tma) {  // a B the map does not describe (rare): its panels one by one
#pragma unroll 1
            for (int p = 0; p < BN / 32; ++p) {
              sgemm::cp_async_swizzled_tile<BK, 32, 128, BL>(b_tile(kt) + p * BK * 32, t.B, kt * BK,
                                                             t.col0 + 32 * p);
            }
          }
        } else if constexpr (BStage::K_MAJOR) {
          if (!b_tma) {  // B^T's rows not K apart, say
            sgemm::cp_async_swizzled_tile<BN, BK, 128, sgemm::ROW_MAJOR>(b_tile(kt), t.B.transposed(), t.col0,
                                                                        kt * BK);
          }
        } else if (b_whole && whole_k) {
          b_plan.copy<BK * BN / 4 / 128>(b_tile(kt), kt);
        } else {
          sgemm::cp_async_tile<BK, BN, 128, BL>(b_tile(kt), t.B, kt * BK, t.col0);
        }
      }
      sgemm::cp_async_commit();
      if (kt < LOOKAHEAD) continue;
      const int ready = kt - LOOKAHEAD;
      sgemm::cp_async_wait<LOOKAHEAD>();  // this thread's copies of k-tile `ready` landed
      if (SPLIT) {
        sgemm::barrier_sync(PRODUCERS_ONLY, 128);  // and every producer's
        float* big = a_part(ready, 0);
        float* small = a_part(ready, 1);
#pragma unroll 4  // 4 float4s at a time: fewer registers live than all 8
        for (int j = 0; j < A_FLOATS / 4 / 128; ++j) {
          const int i = 4 * (j * 128 + threadIdx.x);
          const float4 x = *reinterpret_cast<const float4*>(big + i);
          float4 xb, xs;
          sgemm::split_tf32_fast4(x, xb, xs, probe);
          *reinterpret_cast<float4*>(big + i) = xb;
          *reinterpret_cast<float4*>(small + i) = xs;
        }
      } else if (!a_tma) {
        // TF32, A by cp.async: its k-tile rounded to nearest TF32 in place. (In a
        // TMA instance whose A the map does not describe, A was rounded before
        // the kernel too: rounding is idempotent.)
        sgemm::barrier_sync(PRODUCERS_ONLY, 128);  // every producer's copies landed
        float* const tile = a_part(ready, 0);
#pragma unroll 4
        for (int j = 0; j < A_FLOATS / 4 / 128; ++j) {
          float4& x = *reinterpret_cast<float4*>(tile + 4 * (j * 128 + threadIdx.x));
          x = sgemm::to_tf32_4(x);
        }
      }
      sgemm::fence_proxy_async();  // this thread's writes, for the tensor cores
      sgemm::barrier_arrive(full(ready), THREADS);
    }
  });
  if (!(probe == 0.0f)) saw_non_finite = 1;
  __syncthreads();  // with the consumers' below: saw_non_finite is final
  __syncthreads();  // with the consumers' before the staged stores (the ring is theirs)
} else {
  sgemm::registers_increase<CONSUMER_REGISTERS>();
  // This thread's rows of B^T (columns of C) in the fragments: consumer
  // warpgroup w has columns 64 w.., its warp rows r0 = 16 (warp % 4) + g and
  // r0 + 8 of those, which are columns r0 and r0 + 8 of the 64; with B in TMA
  // panels, the ones SwizzledPanels::fragment_column reads without bank
  // conflicts.
  const int tid = threadIdx.x % 128, lane = tid % 32, g = lane / 4, tg = lane % 4;
  const int r0 = (tid / 32) * 16 + g, wg_col = (warpgroup - 1) * 64;
  const bool panels = TMA && b_row_major;
  auto column = [&](int r) { return panels ? sgemm::SwizzledPanels<BK, BN>::fragment_column(r) : r; };
  const int cols[2] = {column(r0), column(r0 + 8)};  // of the warpgroup's 64: fragment rows r0, r0 + 8
  float acc[BM / 2] = {};
  // Compiled per layout of B and inlined: wgmma products must not be split by
  // a function call (ptxas then serializes them).
  sgemm::with_layout(t.B, [&](auto b_layout) {
    constexpr sgemm::Layout BL = decltype(b_layout)::value;
    using BStage = sgemm::WgmmaBStage<TMA, BL, BK, BN>;
    using BTile = typename BStage::Tile;
    // B^T's rows r0 and r0 + 8 (fragment registers e % 2 = 0, 1).
    const int n_of[2] = {wg_col + cols[0], wg_col + cols[1]};
    float part[BM / 2] = {};
    constexpr int STEPS = BK / 8;  // k8 steps a k-tile
    // B^T's fragments, a set per k8 step (layout: sgemm::wgmma_tf32).
    uint32_t big[STEPS][4], small[STEPS][4];
    // The stage of k-tile `done` goes back (while the producer has k-tiles
    // left to copy).
    auto release = [&](int done) {
      if (done + STAGES < k_tiles) sgemm::barrier_arrive(empty(done), THREADS);
    };
    for (int kt = 0; kt < k_tiles; ++kt) {
      sgemm::barrier_sync(full(kt), THREADS);
      if (uses_tma) sgemm::mbarrier_wait(&loaded[kt % STAGES], (kt / STAGES) % 2);
#pragma unroll
      for (int s = 0; s < STEPS; ++s) {
        if (IN_FLIGHT) {
          // A wgmma reads its register operand asynchronously: until a
          // wait_group covers the product, those registers must not be
          // written (PTX ISA, wgmma.mma_async). Each step is a group of its
          // own, so step s's registers are free once no more than the STEPS
          // - 1 groups after k-tile kt - 1's step s are running. (Waiting
          // per k-tile would put the next k-tile's fragments into registers
          // that queued products have yet to read: wrong columns of C;
          // docs/performance-log.md, "wgmma register operands rewritten in
          // flight".)
          sgemm::wgmma_wait<STEPS - 1>();
        }
        const int k8 = ATile::offset(0, 8 * s);  // the k8 slice of each A part
        const uint64_t a_big = sgemm::wgmma_descriptor<ATile>(a_part(kt, 0) + k8);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float x = BTile::at(b_tile(kt), 8 * s + tg + 4 * (e / 2), n_of[e % 2]);
          if (SPLIT) {
            float xb, xs;
            sgemm::split_tf32_fast(x, xb, xs, probe);
            big[s][e] = __float_as_uint(xb);
            small[s][e] = __float_as_uint(xs);
          } else {
            big[s][e] = sgemm::to_tf32(x);
          }
        }
        sgemm::wgmma_fence();
        if (SPLIT) {
          // The small cross terms first, big * big last (as sgemm::warp_tile_mma_split):
          // the tensor cores' truncating adds then cost at most one rounding
          // of the big product's size (a K = 1 product: <= 3 ulp in all).
          sgemm::wgmma_tf32<BM>(part, small[s], a_big, s > 0);
          sgemm::wgmma_tf32<BM>(
              part, big[s], sgemm::wgmma_descriptor<ATile>(a_part(kt, A_PARTS - 1) + k8), true);
          sgemm::wgmma_tf32<BM>(part, big[s], a_big, true);
        } else if constexpr (FRESH) {
          sgemm::wgmma_tf32<BM>(part, big[s], a_big, s > 0);
        } else {
          sgemm::wgmma_tf32<BM>(acc, big[s], a_big, true);
        }
        if (IN_FLIGHT) sgemm::wgmma_commit();
      }
      // IN_FLIGHT (TF32): the products keep the tensor cores busy through the
      // next k-tile's barrier and fragment loads; the wait before the last
      // step's fragments (above) saw k-tile kt - 1's done. Otherwise the
      // k-tile's products are waited for here: with SPLIT all 12 products'
      // fragment registers stay live until they complete, so waiting every
      // k-tile is what the registers allow (waiting every 2 k-tiles makes
      // ptxas serialize the products: too few registers; waiting per k8 step
      // with the sum folded every 2 k-tiles gains nothing:
      // docs/performance-log.md, "tile_wgmma: when the consumers wait").
      if (IN_FLIGHT) {
        if (kt >= 1) release(kt - 1);
      } else {
        sgemm::wgmma_commit();
        sgemm::wgmma_wait<0>();
        release(kt);
      }
      if (FRESH) {
#pragma unroll
        for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];
      }
    }
    sgemm::wgmma_wait<0>();
  });
  if (!(probe == 0.0f)) saw_non_finite = 1;
  __syncthreads();

  // acc[4j + e] is C^T's (r0 + 8 (e / 2), 8j + 2 tg + e % 2): a thread's
  // values lie 8 columns apart in C, so stored as they are each takes a
  // 4-byte store. Where the tile is whole, each consumer warpgroup first
  // writes its 64 columns of C to the (now idle) ring, then stores whole rows
  // in 16-byte pieces. Where the block's operands hold an Inf or NaN, each
  // output is recomputed with FMAs.
  const bool exact = SPLIT && saw_non_finite;
  const bool staged = !exact && t.row0 + BM <= t.M && t.col0 + BN <= t.N && t.ldc % 4 == 0 &&
                      sgemm::is_16_byte_aligned(t.C);
  // Row stride 68 floats: the 4 row pairs (2 tg) of one store land 8 banks
  // apart (2-way conflicts with B in TMA panels, whose columns are not in order).
  constexpr int LD = 64 + 4;
  static_assert(2 * BM * LD <= STAGES * STAGE_FLOATS, "both warpgroups' columns fit in the ring");
  float* const staging = smem + (warpgroup - 1) * BM * LD;
#pragma unroll
  for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = 8 * j + 2 * tg + e % 2, local_col = cols[e / 2];
      if (staged) {
        staging[r * LD + local_col] = acc[4 * j + e];
        continue;
      }
      const int row = t.row0 + r, col = t.col0 + wg_col + local_col;
      if (row >= t.M || col >= t.N) continue;
      float v = acc[4 * j + e];
      if (exact) {
        v = 0.0f;
        for (int k = 0; k < t.K; ++k) v = fmaf(t.A(row, k), t.B(k, col), v);
      }
      t.C[row * t.ldc + col] = v;
    }
  }
  __syncthreads();  // with the producer's second: the staged columns are written
  if (staged) {
    float* const c_cols = t.C + t.row0 * t.ldc + t.col0 + (warpgroup - 1) * 64;
#pragma unroll 4
    for (int i = tid; i < BM * 16; i += 128) {
      const int r = i / 16, c4 = 4 * (i % 16);
      *reinterpret_cast<float4*>(c_cols + r * t.ldc + c4) =
          *reinterpret_cast<const float4*>(staging + r * LD + c4);
    }
  }
}
