#include "sgemm/half_split_block.cuh"
// The float16 split (mlx_sgemm/emulation/half_split.py), step 1, for both
// operands in one launch: A's rows (a: M x K) and B^T's rows (bt: N x K, B's
// columns), any strides, each line scaled by its own power of two and rounded
// to PARTS float16 parts in the products' swizzled tiles (a_parts, b_parts),
// with the lines' statistics (a_stats_out, b_stats_out): see
// sgemm/half_split_block.cuh. One launch, not one an operand: each node of
// MLX's graph costs a product evaluated alone a few microseconds of host time
// (docs/performance-log.md, "The float16 split in fewer launches").
//
// The first split_blocks(..) of B^T's blocks take B^T, the rest A: B^T's
// tile-way blocks go from its last lines, which int8_line_stats.cu read
// last, so they come first, while those lines are still in L2.
//
// params: M, N, K, k-tiles (of 64), A's lines per tile and tiles, B^T's.
const int m = params[0], n = params[1], K = params[2], k_tiles = params[3];
const int a_per_tile = params[4], a_tiles = params[5], b_per_tile = params[6], b_tiles = params[7];
const int b_blocks = sgemm::split_blocks(b_per_tile, b_tiles, k_tiles);
if (static_cast<int>(blockIdx.x) < b_blocks)
  sgemm::half_split_block<PARTS, WHOLE_K, TOP, MAX_SPAN>(bt, bt_strides[0], bt_strides[1], b_stats,
                                               reinterpret_cast<int8_t*>(b_parts), b_stats_out, n, K, b_per_tile,
                                               b_tiles, k_tiles, blockIdx.x);
else
  sgemm::half_split_block<PARTS, WHOLE_K, TOP, MAX_SPAN>(a, a_strides[0], a_strides[1], a_stats,
                                               reinterpret_cast<int8_t*>(a_parts), a_stats_out, m, K, a_per_tile,
                                               a_tiles, k_tiles, blockIdx.x - b_blocks);
