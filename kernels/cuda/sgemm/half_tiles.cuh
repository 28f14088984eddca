// How half_wgmma and half_mma keep a k-tile of a 16-bit operand in shared memory: 64
// elements of k of each of LINES lines (rows of A, columns of B) in wgmma's 128-byte
// swizzle, K-major or MN-major (HalfKTile), filled by the TMA, by cp.async or element
// by element, and the descriptors wgmma reads it by (mma.sync's ldmatrix reads it
// by offset: sgemm/mma_half.cuh).
#ifndef MLX_SGEMM_HALF_TILES_CUH
#define MLX_SGEMM_HALF_TILES_CUH

#include "async_copy.cuh"
#include "operand.cuh"
#include "tma.cuh"

namespace sgemm {

// Elements of k a stage holds: 128 bytes of halves, one swizzle row.
constexpr int HALF_K_TILE = 64;

// An operand seen as LINES_TOTAL x K lines (A as it is; B transposed, its
// columns as lines): which way its elements lie decides the tile's layout, so
// that the TMA copies boxes of whole 128-byte rows either way.
// - K-major (a line's k contiguous: a row-major A, a transposed view of B as
//   x @ W.T passes it): line l is one 128-byte row, its 16-byte chunk c in slot
//   c ^ (l % 8); 8 lines make a 1024-byte atom. One TMA box of 64 k x LINES.
// - MN-major (lines contiguous: a row-major B, a transposed A): panels of 64
//   lines, each 64 rows of k of 128 bytes (line l's chunk (l % 64) / 8 in slot
//   ((l % 64) / 8) ^ (k % 8)); the panels PANEL_BYTES apart. LINES / 64 TMA boxes
//   of 64 lines x 64 k. wgmma reads it transposed (its TRANS_A / TRANS_B).
template <int LINES>
struct HalfKTile {
  static_assert(LINES % 64 == 0 && LINES <= 256, "whole 64-line panels; a TMA box is at most 256 rows");
  static constexpr int BYTES = LINES * HALF_K_TILE * 2;
  static constexpr int PANEL_BYTES = 64 * HALF_K_TILE * 2;
  static constexpr uint32_t ATOM_BYTES = 1024;  // 8 rows of 128 bytes

  __device__ static int offset(bool mn_major, int line, int k) {
    if (mn_major) {
      return (line / 64) * PANEL_BYTES + k * 128 + ((((line % 64) / 8) ^ (k % 8)) * 16) + (line % 8) * 2;
    }
    return line * 128 + (((k / 8) ^ (line % 8)) * 16) + (k % 8) * 2;
  }

  // The descriptor of the 64 x 16 (A) or 16 x N (B) slice that starts at line
  // `line0` (a multiple of 64) and at k = 16 ks: its address, LBO, SBO (each
  // in 16-byte units) and the 128-byte swizzle. K-major: k16 is 32 bytes into
  // each row (LBO unused), the 8-line atoms SBO apart. MN-major: k16 is 16
  // rows (2 atoms) down the panel; SBO steps 8 rows of k, LBO one panel of 64 lines.
  __device__ static uint64_t descriptor(const int8_t* tile, bool mn_major, int line0, int ks) {
    const int8_t* p = mn_major ? tile + (line0 / 64) * PANEL_BYTES + ks * 16 * 128 : tile + line0 * 128 + ks * 32;
    const uint64_t address = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    const uint64_t lbo = mn_major ? PANEL_BYTES : 16;
    return ((address & 0x3ffff) >> 4) | ((lbo >> 4) << 16) | (uint64_t(ATOM_BYTES >> 4) << 32) | (1ull << 62);
  }

  // The TMA's copies of the tile of lines line0.. and k = k.. from the map at
  // `map` (K-major: of the LINES_TOTAL x K matrix; MN-major: of K x
  // LINES_TOTAL), zeros outside, their bytes counted on `bar`.
  __device__ static void copy(int8_t* tile, bool mn_major, const void* map, int line0, int k, uint64_t* bar) {
    if (mn_major) {
#pragma unroll
      for (int p = 0; p < LINES / 64; ++p) tma_load_2d(tile + p * PANEL_BYTES, map, line0 + 64 * p, k, bar);
    } else {
      tma_load_2d(tile, map, k, line0, bar);
    }
  }

  // The same tile written element by element by `threads` threads (this one
  // `thread`), for an operand the TMA cannot take (strides of no map, rows
  // not 16-byte aligned), zeros outside: consecutive threads read neighbours
  // in memory. The writers must fence (fence_proxy_async) before they publish
  // the tile to wgmma.
  template <typename T>
  __device__ static void fill(int8_t* tile, bool mn_major, const Operand<T>& lines, int line0, int k0,
                              int thread, int threads) {
    T* const out = reinterpret_cast<T*>(tile);
    for (int i = thread; i < LINES * HALF_K_TILE; i += threads) {
      const int line = mn_major ? i % LINES : i / HALF_K_TILE;
      const int k = mn_major ? i / LINES : i % HALF_K_TILE;
      out[offset(mn_major, line, k) / 2] = lines.raw_at(line0 + line, k0 + k);
    }
  }

  // Can the tile's 16-byte chunks (8 elements along the operand's contiguous
  // direction: k K-major, lines MN-major) be copied by cp.async? Lines with
  // that direction contiguous, 16 bytes apart by whole multiples, from a
  // 16-byte aligned start (the tiles' own starts are multiples of 64 either way).
  template <typename T>
  __device__ static bool copies_in_chunks(bool mn_major, const Operand<T>& lines) {
    return is_16_byte_aligned(lines.p) &&
           (mn_major ? lines.rs == 1 && lines.cs % 8 == 0 : lines.cs == 1 && lines.rs % 8 == 0);
  }

  // Start copying the tile of lines line0.. and k = k0.. by cp.async, THREADS
  // threads (this one `thread`), zeros outside: one 16-byte copy a chunk, a
  // partial one at the operand's edge, consecutive threads reading
  // neighbouring chunks in memory. Without `chunks` (copies_in_chunks false:
  // general strides, odd rows) element by element (fill), whose plain stores
  // reach the other threads through the same barrier as the copies.
  template <int THREADS, typename T>
  __device__ static void copy_async(int8_t* tile, bool mn_major, const Operand<T>& lines, int line0, int k0,
                                    bool chunks, int thread) {
    static_assert(sizeof(T) == 2, "16-bit elements: 8 a chunk");
    constexpr int CHUNKS = LINES * HALF_K_TILE / 8, LINE_CHUNKS = LINES / 8, K_CHUNKS = HALF_K_TILE / 8;
    static_assert(CHUNKS % THREADS == 0, "every thread copies the same number of chunks");
    if (!chunks) {
      fill(tile, mn_major, lines, line0, k0, thread, THREADS);
      return;
    }
#pragma unroll
    for (int j = 0; j < CHUNKS / THREADS; ++j) {
      const int i = j * THREADS + thread;
      const int line = mn_major ? (i % LINE_CHUNKS) * 8 : i / K_CHUNKS;
      const int k = mn_major ? i / LINE_CHUNKS : (i % K_CHUNKS) * 8;
      const int l = line0 + line, kk = k0 + k;
      const int valid = mn_major ? (kk < lines.cols ? max(0, min(8, lines.rows - l)) : 0)
                                 : (l < lines.rows ? max(0, min(8, lines.cols - kk)) : 0);
      cp_async<16>(tile + offset(mn_major, line, k), valid ? lines.p + l * lines.rs + kk * lines.cs : lines.p,
                   2 * valid);
    }
  }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_HALF_TILES_CUH
