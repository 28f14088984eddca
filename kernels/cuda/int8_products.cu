#include "sgemm/bulk_ring.cuh"
#include "sgemm/int8_tiles.cuh"
#include "sgemm/producer_consumer.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/wgmma.cuh"
// Chapter 7, step 2 of the INT8 emulation: for each modulus p_i, the product
// of A's residues by B's on the INT8 tensor cores (Hopper wgmma, int8 x int8
// -> int32, exact), reduced modulo p_i as it leaves the registers, so that one
// byte an output goes back to memory instead of four:
//   residues[i] (M x N, int8) = (RA_i RB_i^T) mod p_i, symmetric.
//
// The residues arrive as tiles already in wgmma's 128-byte swizzle
// (sgemm/int8_tiles.cuh), so a k-tile of A (128 rows x 128 bytes) and of B
// (256 rows x 128 bytes) each come in with one bulk copy by the TMA, and no
// tensor map is needed. Block: a BM x BN = 128 x 256 tile of one modulus, 384
// threads.
// - Warpgroup 0, the producer: one thread keeps STAGES k-tiles in flight in
//   a ring of stages (sgemm::BulkRing).
// - Warpgroups 1 and 2, the consumers, own rows 0-63 and 64-127 of the tile
//   by all 256 columns: an m64n256k32 product per 32 bytes of K, both operands
//   read by the tensor cores from shared memory (128 int32 accumulators a
//   thread). Each k-tile's 4 products are a group; the consumers wait for the
//   group before last and hand its stage back, so the tensor cores always
//   have the next k-tile's products queued.
// Tiles walked in bands of GROUP_M rows, so the blocks in flight share A's and
// B's k-tiles in L2.
//
// choice: the moduli (int8_choice.cu).
// params: M, N, Np (the residues' row length: N padded to BN), k-tiles, tiles
// in M, tiles in N, then the moduli.
static_assert(BM == 128 && BN == 256, "2 consumer warpgroups of m64n256 products");
constexpr int A_BYTES = BM * sgemm::RESIDUE_K_TILE, B_BYTES = BN * sgemm::RESIDUE_K_TILE;
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int K_STEPS = sgemm::RESIDUE_K_TILE / 32;  // k32 products a k-tile
using Ring = sgemm::BulkRing<STAGES, STAGE_BYTES, 2>;
extern __shared__ int4 smem_int4[];
__shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];

const int M = params[0], Np = params[2], k_tiles = params[3];
const int tiles_m = params[4], tiles_n = params[5];
const int tiles = tiles_m * tiles_n;
// Block b computes tile b % tiles for moduli b / tiles, + SPREAD, + 2 SPREAD,
// .. below the choice's count: the grid has SPREAD blocks a tile, SPREAD the
// fewest moduli the choice can name (mlx_sgemm.emulation.gpu.products), so no
// block is launched for nothing, and a block's producer fetches its next modulus's first k-tiles
// while the consumers store the last one's outputs.
const int spread = gridDim.x / tiles, first_modulus = blockIdx.x / tiles;
const int rounds = (choice[sgemm::CHOICE_MODULI] - first_modulus + spread - 1) / spread;
if (rounds <= 0) return;
int row0, col0;
sgemm::tile_origin<GROUP_M>(blockIdx.x % tiles, tiles_m, tiles_n, BM, BN, row0, col0);

const Ring ring(smem_int4, full, empty);

// Step i of the block: k-tile i % k_tiles of its round i / k_tiles.
const int warpgroup = threadIdx.x / 128;
if (warpgroup == 0) {
  sgemm::registers_decrease<Ring::PRODUCER_REGISTERS>();
  if (threadIdx.x == 0) {
    for (int i = 0; i < rounds * k_tiles; ++i) {
      const int modulus = first_modulus + i / k_tiles * spread, kt = i % k_tiles;
      int8_t* const stage = ring.produce(i);
      sgemm::bulk_copy(stage, ra + sgemm::residue_tile_offset(modulus, row0 / BM, kt, tiles_m, k_tiles, BM),
                       A_BYTES, ring.landed(i));
      sgemm::bulk_copy(stage + A_BYTES,
                       rb + sgemm::residue_tile_offset(modulus, col0 / BN, kt, tiles_n, k_tiles, BN), B_BYTES,
                       ring.landed(i));
    }
  }
} else {
  sgemm::registers_increase<Ring::CONSUMER_REGISTERS>();
  const int tid = threadIdx.x % 128;
  for (int round = 0; round < rounds; ++round) {
    const int modulus = first_modulus + round * spread;
    int32_t acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int i = round * k_tiles + kt;
      const int8_t* const stage = ring.consume(i);
      const int8_t* const a_rows = stage + (warpgroup - 1) * 64 * sgemm::RESIDUE_K_TILE;
      const int8_t* const b_rows = stage + A_BYTES;
      sgemm::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < K_STEPS; ++ks) {
        sgemm::wgmma_s8_ss_n256(acc, sgemm::wgmma_descriptor<sgemm::ResidueTile>(a_rows + 32 * ks),
                                sgemm::wgmma_descriptor<sgemm::ResidueTile>(b_rows + 32 * ks));
      }
      sgemm::wgmma_commit();
      sgemm::wgmma_wait<1>();  // step i - 1's products are done: its stage goes back
      if (kt > 0 && tid == 0) ring.release(i - 1);
    }
    sgemm::wgmma_wait<0>();
    if (tid == 0) ring.release(round * k_tiles + k_tiles - 1);

    // acc[4j + e] is row 16 warp + g + 8 (e / 2), column 8j + 2t + e % 2 of the
    // warpgroup's 64 x 256: of each 8-byte run j of a row, a thread holds the
    // 2 bytes at 2t. The 4 lanes of a quad (same g) trade them by shuffles so
    // that lane t stores whole runs, j = 4q + t: 16 stores of 8 bytes a thread
    // instead of 64 of 2, whose warp stores filled each 32-byte sector a
    // quarter (storing so took 136 us of the products' 819 at 4096^3 on an
    // H200, the shuffles and 8-byte runs ~40 us less).
    const sgemm::IntModulus mod = sgemm::make_int_modulus(params[6 + modulus]);
    const int lane = tid % 32, g = lane / 4, t = lane % 4;
    const bool even = t % 2 == 0, upper = t >= 2;
    const int row_base = row0 + (warpgroup - 1) * 64 + (tid / 32) * 16 + g;
    int8_t* const out = residues + static_cast<int64_t>(modulus) * M * Np + col0 + 8 * t;
    // The 2 residues of columns 8j + 2t, + 1 of row half h, as 16 bits.
    auto pair = [&](int j, int h) {
      return (static_cast<uint32_t>(sgemm::symmetric_residue_of_sum(acc[4 * j + 2 * h], mod)) & 0xffu) |
             (static_cast<uint32_t>(sgemm::symmetric_residue_of_sum(acc[4 * j + 2 * h + 1], mod)) & 0xffu) << 8;
    };
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_base + 8 * h;
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        // A 4 x 4 transpose of 16-bit pairs across the quad: lane t holds
        // runs 4q .. 4q + 3's pairs t and ends with run 4q + t's pairs 0 .. 3.
        // Step 1 (lanes 2 apart): lanes 0, 1 keep runs 4q, 4q + 1 and take
        // lane t + 2's; lanes 2, 3 the same with runs 4q + 2, 4q + 3.
        const uint32_t a = pair(4 * q, h) | pair(4 * q + 1, h) << 16;
        const uint32_t b = pair(4 * q + 2, h) | pair(4 * q + 3, h) << 16;
        const uint32_t keep1 = upper ? b : a;
        const uint32_t got1 = __shfl_xor_sync(0xffffffffu, upper ? a : b, 2);
        // Step 2 (neighbouring lanes): each keeps the pairs of its own run
        // (lanes t and t ^ 2's) and takes its neighbour's.
        const uint32_t low_halves = __byte_perm(keep1, got1, 0x5410), high_halves = __byte_perm(keep1, got1, 0x7632);
        const uint32_t keep2 = even ? low_halves : high_halves;
        const uint32_t got2 = __shfl_xor_sync(0xffffffffu, even ? high_halves : low_halves, 1);
        // Pairs of lanes 0 and 2 (lo), 1 and 3 (hi), in lane order: 0 1, 2 3.
        const uint32_t lo = even ? keep2 : got2, hi = even ? got2 : keep2;
        const uint32_t first = __byte_perm(lo, hi, 0x5410), second = __byte_perm(lo, hi, 0x7632);
        if (row < M)
          *reinterpret_cast<uint2*>(out + static_cast<int64_t>(row) * Np + 32 * q) =
              upper ? make_uint2(second, first) : make_uint2(first, second);
      }
    }
  }
}
