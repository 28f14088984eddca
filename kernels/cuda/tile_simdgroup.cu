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
// times the work, so the idea of this stage is the register-blocked warp tile:
// each warp keeps a WM x WN = 64x32 tile of 4x4 m16n8 accumulators, and each
// fragment it loads serves 4 products (sgemm::warp_tile_mma_presplit). The
// split is done once per element, by the thread that loads it into shared
// memory (sgemm::load_tile_split: big and small tiles side by side), not by
// each of the 4 warps that read it: what is left between the tensor-core
// products is two shared-memory loads a fragment register.
//
// Block: BM x BN = 128x128 outputs, 8 warps as 2 (rows) x 4 (columns). K
// advances BK at a time through shared memory, loaded through registers, where
// operands of float16 or bfloat16 (TA, TB) become float32 and are split; the
// main loop is compiled per layout pair (sgemm::with_layouts), each operand's
// tiles in its own orientation. The
// fast split does not carry Inf or NaN; a block whose operands hold one notes
// it (the split's probe) and recomputes its outputs with FMAs.
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
static_assert(THREADS == 256, "the spec launches 256 threads");

// Tiles in each operand's own orientation (sgemm::SmemTile: a run of 4
// elements is one 16-byte store), padded so that fragment reads are
// conflict-free; each in a big and a small part.
__shared__ __align__(16) float As[2][sgemm::SmemTile<sgemm::ROW_MAJOR, BM, BK>::MAX_FLOATS];
__shared__ __align__(16) float Bs[2][sgemm::SmemTile<sgemm::ROW_MAJOR, BK, BN>::MAX_FLOATS];
__shared__ int saw_non_finite;

const sgemm::Tile<TA, TB> t = sgemm::locate_tile(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
const int warp = threadIdx.x / 32;
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
if (threadIdx.x == 0) saw_non_finite = 0;

sgemm::with_layouts(t.A, t.B, [&](auto a_layout, auto b_layout) SGEMM_MAIN_LOOP {
  constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
  using ATile = sgemm::SmemTile<AL, BM, BK>;
  using BTile = sgemm::SmemTile<BL, BK, BN>;
  float acc[WM / 16][WN / 8][4] = {};
  float probe = 0.0f;  // NaN once this thread has split an Inf or NaN
  for (int k0 = 0; k0 < t.K; k0 += BK) {
    sgemm::load_tile_split<ATile, BM, BK, THREADS, AL>(As[0], As[1], t.A, t.row0, k0, probe);
    sgemm::load_tile_split<BTile, BK, BN, THREADS, BL>(Bs[0], Bs[1], t.B, k0, t.col0, probe);
    __syncthreads();
    sgemm::warp_tile_mma_presplit<WM / 16, WN / 8, BK, ATile, BTile>(acc, As[0], As[1], Bs[0], Bs[1],
                                                                    wm0, wn0);
    __syncthreads();
  }
  if (!(probe == 0.0f)) saw_non_finite = 1;
  __syncthreads();
  sgemm::store_warp_tile(t, acc, wm0, wn0, saw_non_finite != 0);
});
