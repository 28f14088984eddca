// The 128-byte swizzled shared-memory layouts wgmma reads, filled by cp.async or the
// TMA (SwizzledTile, SwizzledPanels), and where tile_wgmma keeps B's k-tile (WgmmaBStage).
#ifndef MLX_SGEMM_SWIZZLED_TILE_CUH
#define MLX_SGEMM_SWIZZLED_TILE_CUH

#include "dispatch.cuh"
#include "operand.cuh"
#include "smem_tile.cuh"

namespace sgemm {

// A ROWS x BK tile (BK = 32) in the layout wgmma reads from shared memory
// with the 128-byte swizzle. Its k runs fastest, as TF32 wgmma requires for the
// shared-memory operand ("K-major"; only 16-bit types may be transposed): row
// r is 128 contiguous bytes, its 16-byte chunk c stored in slot c ^ (r % 8);
// 8 rows make a 1024-byte atom (SBO), and the tile must start 1024-byte
// aligned. Element (r, k) is at offset(r, k). Why the swizzle (measured on an
// H200 against the unswizzled "core matrix" layout: 1.1x float32, 1.8x TF32;
// docs/performance-log.md, "tile_wgmma: A in the 128-byte swizzle"):
// a warp copies 4 whole rows of the operand, whole 128-byte lines, half the
// L2 requests of the 8 rows x 64 bytes a core-matrix copy takes (TF32 was
// bound by the L2's tag lookups, 88% busy), and each 8 lanes writing one row
// hit 8 different slots (no bank conflicts).
template <int ROWS, int BK>
struct SwizzledTile {
  static_assert(ROWS % 8 == 0 && BK == 32, "8-row atoms of 128-byte rows");
  static constexpr int FLOATS = ROWS * BK;
  static constexpr int LBO = 16;     // unused with a swizzle along K (one atom wide)
  static constexpr int SBO = 1024;   // bytes between 8-row atoms
  static constexpr uint64_t LAYOUT = 1;  // descriptor layout type: 128-byte swizzle
  __device__ static int offset(int r, int k) {
    return r * BK + (((k / 4) ^ (r % 8)) * 4) + k % 4;
  }
  static constexpr int LINE_CHUNKS = BK / 4;  // chunk i + LINE_CHUNKS: the next row
  __device__ static Chunk chunk(int i) {
    const int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
    return {r, c, offset(r, c)};
  }
};

// A K x N tile of a row-major B (k rows of N floats) as the TMA lays it out in
// 128-byte-swizzled boxes of 32 columns: BN / 32 panels, each a
// SwizzledTile<BK, 32> whose rows are k. Element (k, n) is at offset(k, n).
// Read as the register operand of tile_wgmma (B^T's fragments: lanes g take 8
// columns n, lanes t 4 rows k), bank conflicts are avoided by the choice of
// columns, fragment_column below.
template <int BK, int BN>
struct SwizzledPanels {
  static_assert(BN % 32 == 0, "whole 128-byte panels");
  using Panel = SwizzledTile<BK, 32>;
  static constexpr int FLOATS = BK * BN;
  __device__ static int offset(int k, int n) { return (n / 32) * Panel::FLOATS + Panel::offset(k, n % 32); }
  __device__ static float at(const float* s, int k, int n) { return s[offset(k, n)]; }
  // Which of the 64 columns (of a consumer warpgroup's) fragment row r holds,
  // r = 16 w + 8 h + g (warp w, half h, lane group g): columns 16 (g / 4) + g % 4
  // of a panel, moved by 4 (2 (w % 2) + h). One load of a warp then reads 4
  // rows k (4 slots of one 4-slot group after the swizzle) x 8 columns in 2
  // groups x 4 words: 32 banks. (Consecutive columns would read each bank twice.)
  __device__ static int fragment_column(int r) {
    const int w = r / 16, h = (r / 8) % 2, g = r % 8;
    return 32 * (w / 2) + 16 * (g / 4) + 4 * (2 * (w % 2) + h) + g % 4;
  }
};

// B^T's rows (x @ W.T: a transposed view of a row-major W) as the TMA lays
// them out, ROWS x BK in a SwizzledTile (K-major, like A's), read as B's
// element (k, n). Read as B^T's fragments (lanes g take 8 rows n, lanes t 4
// k), the swizzle puts each lane group's row in its own 16-byte slot: 32 banks.
template <int BN, int BK>
struct SwizzledRowsOfBT : SwizzledTile<BN, BK> {
  __device__ static float at(const float* s, int k, int n) { return s[SwizzledTile<BN, BK>::offset(n, k)]; }
};

// How tile_wgmma keeps a k-tile of B (K x N, layout BL) in shared memory. With
// the TMA (row-major operands described by tensor maps): a row-major B in the
// TMA's swizzled panels, a transposed view (x @ W.T) as B^T's BN rows in a
// SwizzledTile (K_MAJOR). Without: a padded SmemTile in B's own layout. Either
// way the consumers read it as B^T's fragments, the same whichever way the
// tile was copied (a B the maps do not describe is copied by cp.async into the
// same layout).
template <bool TMA, Layout BL, int BK, int BN>
struct WgmmaBStage {
  static constexpr bool PANELS = TMA && BL == ROW_MAJOR;
  static constexpr bool K_MAJOR = TMA && BL == COL_MAJOR;
  using Tile = typename Choose<PANELS, SwizzledPanels<BK, BN>,
                               typename Choose<K_MAJOR, SwizzledRowsOfBT<BN, BK>, SmemTile<BL, BK, BN>>::type>::type;
};

}  // namespace sgemm

#endif  // MLX_SGEMM_SWIZZLED_TILE_CUH
