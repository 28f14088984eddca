#include "sgemm/dispatch.cuh"
#include "sgemm/mma_sync.cuh"
#include "sgemm/operand.cuh"
#include "sgemm/schedule.cuh"
#include "sgemm/split_ring.cuh"
#include "sgemm/split_tile.cuh"
// Stage 4, tile_simdgroup: the matrix units. NVIDIA's counterpart of Metal's
// simdgroup_float8x8 is the warp-wide tensor-core product mma.sync; a warp
// multiplies a 16x8 by an 8x8 tile in one instruction.
//
// Tensor cores read float32 inputs as TF32 (10 mantissa bits, ~3e-4 relative
// error). To stay float32-accurate every operand is split into two TF32 parts,
// x = big + small, and each product is computed as three tensor-core products
// (3xTF32): small*big + big*small + big*big. Three times the work, so the idea
// of this stage is the register-blocked warp tile: each warp keeps a
// WM x WN = 64x32 tile of 4x4 m16n8 accumulators, and each fragment it loads
// serves 4 products (sgemm::warp_tile_mma_split). The split is done once per
// element, by the thread that stores it into shared memory, and the split
// k-tiles are laid out in fragment order (sgemm::SplitTile): what is left
// between the tensor-core products is one 16-byte shared-memory load for a
// fragment's big and small registers of two k.
//
// Block: BM x BN = 128x128 outputs, multiplied by 8 warps as 2 (rows) x 4
// (columns). Their accumulators and fragments take ~180 registers a thread,
// so one block fits an SM: 2 multiplying warps a scheduler, and no other
// block's warps to hide a k-tile's loads behind. The block hides them itself,
// its k-tiles fetched from device memory into registers (sgemm::SplitTileStager),
// converted (float16, bfloat16: TA, TB), split and stored into shared memory
// while the products of an earlier k-tile run:
// - On Hopper (LOADERS = 4), by a warpgroup of its own: it fills a ring of
//   STAGES buffers, one named barrier a buffer saying "loaded" (FULL) and one
//   "multiplied" (EMPTY), so the multiplying warps issue nothing but ldmatrix
//   and mma.sync. setmaxnreg (sm_90a) moves the registers where they are
//   needed (sgemm::SplitRing): 384 threads x 168 at launch, the loaders keep
//   120, the multipliers take 192. The loaders read every k-tile that lies
//   wholly inside both operands by plain 16-byte loads, and check bounds only
//   at the edges. H200, 4096^3 / 8192^3: 47.7 / 48.9 TFLOP/s in the recorded
//   sweep, against 35.1 / 36.7 with the 8 warps loading too and 42.3 / 44.2
//   with every k-tile's bounds checked (docs/performance-log.md, "tile_simdgroup
//   and tile_async: a loading warpgroup" and "tile_simdgroup: the loaders check
//   bounds at the edges only").
// - Elsewhere (LOADERS = 0), by the 8 warps: while they multiply one k-tile,
//   each thread's share of the next is in flight into its registers; it is
//   split and stored into the other of two buffers after the products, and
//   one barrier a k-tile hands the buffers over.
// Each operand is read along its contiguous direction, the loading code
// compiled per layout pair (sgemm::with_layouts). The fast split does not
// carry Inf or NaN; a block whose operands hold one notes it (the split's
// probe) and recomputes its outputs with FMAs.
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32 + 32 * LOADERS;
static_assert(LOADERS == 0 || LOADERS == 4, "none or a warpgroup loading");
static_assert(LOADERS > 0 || (THREADS == 256 && STAGES == 2), "8 warps, two buffers");
// The loaders' registers: a k-tile's runs in flight and their addresses (two
// k-tiles' would spill, measured slower).
using Ring = sgemm::SplitRing<BM, BN, BK, STAGES, 120>;
static_assert(LOADERS == 0 || (THREADS == Ring::THREADS && WM == Ring::WM && WN == Ring::WN), "the ring's block");

// STAGES buffers of (A tile, B^T tile), split, in fragment order: the spec asks
// MLX for STAGES * STAGE_FLOATS floats (mlx_sgemm/build/specs.py).
extern __shared__ float4 smem_float4[];
constexpr int A_FLOATS = Ring::A_FLOATS, STAGE_FLOATS = Ring::STAGE_FLOATS;
__shared__ int saw_non_finite;

const sgemm::Tile<TA, TB> t = sgemm::locate_tile(
    BM, BN, params, a, a_shape, a_strides, b, b_shape, b_strides, c);
if (threadIdx.x == 0) saw_non_finite = 0;

if constexpr (LOADERS > 0) {
  const Ring ring{reinterpret_cast<float*>(smem_float4)};
  const int k_tiles = (t.K + BK - 1) / BK;
  ring.run(t, k_tiles, &saw_non_finite, [&](float& probe) {
    // A as M x K, B as its N x K transpose: both tiles are lines of k.
    sgemm::with_layouts(t.A, t.B.transposed(), [&](auto a_layout, auto b_layout) {
      constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
      const sgemm::Operand<TA> A = t.A;
      const sgemm::Operand<TB> Bt = t.B.transposed();
      sgemm::SplitTileStager<AL, BM, BK, Ring::LOAD_THREADS, TA> a_next;
      sgemm::SplitTileStager<BL, BN, BK, Ring::LOAD_THREADS, TB> b_next;
      // k-tile kt, read with (IntTag<0>) or without (IntTag<1>) bounds checks.
      auto load = [&](int kt, auto inside) {
        a_next.template fetch<decltype(inside)::value>(A, t.row0, kt * BK);
        b_next.template fetch<decltype(inside)::value>(Bt, t.col0, kt * BK);
        float* tiles = ring.slot(kt);
        a_next.store(tiles, probe);
        b_next.store(tiles + A_FLOATS, probe);
        ring.loaded(kt);
      };
      // The checks were most of the loaders' instructions (41.0 / 43.7 TFLOP/s
      // with them on every k-tile); each kind in a loop of its own, since in
      // one loop the registers of both raised the loaders' need past 120 (43.2
      // / 45.2 at 136, the multipliers left 184).
      const bool lines_inside = a_next.lines_inside(A, t.row0) && b_next.lines_inside(Bt, t.col0);
      const int inside_k_tiles = lines_inside ? t.K / BK : 0;
      int kt = 0;
      for (; kt < inside_k_tiles; ++kt) load(kt, sgemm::IntTag<1>{});
      for (; kt < k_tiles; ++kt) load(kt, sgemm::IntTag<0>{});
    });
  });
} else {
const int warp = threadIdx.x / 32;
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
// A as M x K, B as its N x K transpose: both tiles are lines of k.
sgemm::with_layouts(t.A, t.B.transposed(), [&](auto a_layout, auto b_layout) SGEMM_MAIN_LOOP {
  constexpr sgemm::Layout AL = decltype(a_layout)::value, BL = decltype(b_layout)::value;
  // The operands as values of this function: read through the captured tile,
  // every fetch would load them again from memory.
  const sgemm::Operand<TA> A = t.A;
  const sgemm::Operand<TB> Bt = t.B.transposed();
  const int row0 = t.row0, col0 = t.col0;
  // Named here, not captured: through a captured pointer the compiler no
  // longer knows the buffers are shared memory, and every access is a
  // generic load or store (LD, ST), slower than LDS and STS.
  float* const smem = reinterpret_cast<float*>(smem_float4);
  sgemm::SplitTileStager<AL, BM, BK, THREADS, TA> a_next;
  sgemm::SplitTileStager<BL, BN, BK, THREADS, TB> b_next;
  float acc[WM / 16][WN / 8][4] = {};
  float probe = 0.0f;  // NaN once this thread has split an Inf or NaN
  const int k_tiles = (A.cols + BK - 1) / BK;

  // Prologue: k-tile 0 into buffer 0.
  a_next.fetch(A, row0, 0);
  b_next.fetch(Bt, col0, 0);
  a_next.store(smem, probe);
  b_next.store(smem + A_FLOATS, probe);
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const float* tiles = smem + (kt % 2) * STAGE_FLOATS;
    const bool more = kt + 1 < k_tiles;
    if (more) {
      a_next.fetch(A, row0, (kt + 1) * BK);
      b_next.fetch(Bt, col0, (kt + 1) * BK);
    }
    sgemm::warp_tile_mma_split<WM / 16, WN / 8, BK, BM, BN>(acc, tiles, tiles + A_FLOATS, wm0, wn0);
    if (more) {
      // The other buffer: every warp finished reading it before the last barrier.
      float* next = smem + ((kt + 1) % 2) * STAGE_FLOATS;
      a_next.store(next, probe);
      b_next.store(next + A_FLOATS, probe);
    }
    __syncthreads();
  }
  if (!(probe == 0.0f)) saw_non_finite = 1;
  __syncthreads();
  sgemm::store_warp_tile(t, acc, wm0, wn0, saw_non_finite != 0);
});
}
