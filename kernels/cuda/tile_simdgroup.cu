#include "sgemm/dispatch.cuh"
#include "sgemm/load.cuh"
#include "sgemm/mma_sync.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/smem_tile.cuh"
// Stage 4, tile_simdgroup: the matrix units. NVIDIA's counterpart of Metal's
// simdgroup_float8x8 is the warp-wide tensor-core product mma.sync; a warp
// multiplies a 16x8 by an 8x8 tile in one instruction.
//
// Tensor cores read float32 inputs as TF32 (10 mantissa bits, ~3e-4 relative
// error). To stay float32-accurate every operand is split into two TF32 parts,
// x = big + small, and each product is computed as three tensor-core products
// (3xTF32): small*big + big*small + big*big, see sgemm::mma_3xtf32. Three
// times the work, still faster than the FMA units.
//
// Block: BM x BN = 128x128 outputs, 8 warps as 2 (rows) x 4 (columns), each warp
// a WM x WN = 64x32 tile of 4x4 m16n8 products (sgemm::warp_tile_mma). K
// advances BK = 8 at a time through shared memory, loaded through registers,
// where operands of float16 or bfloat16 (TA, TB) become float32: the tiles,
// and the 3xTF32 split of them, are float32 whatever the operands' type.
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
static_assert(THREADS == 256, "the spec launches 256 threads");

// Row-major tiles whatever the operands' layouts (load_tile transposes on the
// way in), padded so that fragment reads are conflict-free.
using ATile = sgemm::SmemTile<sgemm::ROW_MAJOR, BM, BK>;
using BTile = sgemm::SmemTile<sgemm::ROW_MAJOR, BK, BN>;
__shared__ __align__(16) float As[ATile::FLOATS];
__shared__ __align__(16) float Bs[BTile::FLOATS];

const sgemm::Tile<TA, TB> t = sgemm::locate_tile(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int warp = threadIdx.x / 32;
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;

sgemm::with_layouts(t.A, t.B, [&](auto a_layout, auto b_layout) SGEMM_MAIN_LOOP {
  constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
  float acc[WM / 16][WN / 8][4] = {};
  for (int k0 = 0; k0 < t.K; k0 += BK) {
    sgemm::load_tile<BM, BK, ATile::LD, THREADS, AL>(As, t.A, t.row0, k0);
    sgemm::load_tile<BK, BN, BTile::LD, THREADS, BL>(Bs, t.B, k0, t.col0);
    __syncthreads();
    sgemm::warp_tile_mma<WM / 16, WN / 8, BK, ATile, BTile, true>(acc, As, Bs, wm0, wn0);
    __syncthreads();
  }
  sgemm::store_warp_tile(t, acc, wm0, wn0);
});
