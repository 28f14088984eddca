// Padded shared-memory tiles (SmemTile): a tile in its operand's orientation, rows
// padded so that mma.sync fragment reads are conflict-free, cut into 16-byte chunks for copies.
#ifndef MLX_SGEMM_SMEM_TILE_CUH
#define MLX_SGEMM_SMEM_TILE_CUH

#include "operand.cuh"

namespace sgemm {

// Row stride of a shared-memory tile whose contiguous extent is EXTENT floats:
// padded so that the warps' fragment reads hit 32 different banks (see
// warp_tile_mma_tf32), and 16-byte rows for cp.async.
template <int EXTENT>
__host__ __device__ constexpr int padded() {
  return EXTENT + (EXTENT >= 64 ? 8 : 4);
}

// One 16-byte copy into a shared-memory tile: the 4 operand elements from
// tile-relative (r, c) along the operand's contiguous direction, to the tile's
// float offset `smem`.
struct Chunk {
  int r, c, smem;
};

// A ROWS x COLS tile of an operand with layout L as cp.async leaves it in shared
// memory: in the operand's own orientation (a copy cannot transpose), so
// row-major as smem[r][c] and column-major as smem[c][r].
template <Layout L, int ROWS, int COLS>
struct SmemTile {
  static constexpr int LD = L == ROW_MAJOR ? padded<COLS>() : padded<ROWS>();
  static constexpr int FLOATS = L == ROW_MAJOR ? ROWS * LD : COLS * LD;
  // Room for the tile in either orientation.
  static constexpr int MAX_FLOATS = ROWS * padded<COLS>() > COLS * padded<ROWS>()
                                        ? ROWS * padded<COLS>() : COLS * padded<ROWS>();
  __device__ static int offset(int r, int c) { return L == ROW_MAJOR ? r * LD + c : c * LD + r; }
  __device__ static float at(const float* s, int r, int c) { return s[offset(r, c)]; }
  // A run of 4 elements from (r, c), along the tile's row (along_rows) or
  // down its column: one 16-byte store where that is the tile's contiguous
  // direction, four otherwise.
  __device__ static void store4(float* s, int r, int c, float4 v, bool along_rows) {
    if (along_rows == (L == ROW_MAJOR)) {
      *reinterpret_cast<float4*>(s + offset(r, c)) = v;
    } else {
      const int dr = along_rows ? 0 : 1, dc = along_rows ? 1 : 0;
      s[offset(r, c)] = v.x;
      s[offset(r + dr, c + dc)] = v.y;
      s[offset(r + 2 * dr, c + 2 * dc)] = v.z;
      s[offset(r + 3 * dr, c + 3 * dc)] = v.w;
    }
  }
  // The 16-byte chunk i of the tile (see Chunk): consecutive chunks run along
  // the operand's contiguous direction, so consecutive threads copy
  // consecutive addresses.
  static constexpr int LINE = L == ROW_MAJOR ? COLS : ROWS;  // contiguous extent
  static constexpr int LINE_CHUNKS = LINE / 4;  // chunk i + LINE_CHUNKS: the next line
  __device__ static Chunk chunk(int i) {
    const int line = i / (LINE / 4), pos = (i % (LINE / 4)) * 4;
    return L == ROW_MAJOR ? Chunk{line, pos, line * LD + pos} : Chunk{pos, line, line * LD + pos};
  }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_SMEM_TILE_CUH
