#include "sgemm/int8_tiles.cuh"
#include "sgemm/block_line_stats.cuh"
// Chapter 7, the emulations' pre-pass: for each line of A (a: M x K, any
// strides) and of B^T (bt: N x K, any strides: B's columns) its statistics
// (sgemm::LineStats: largest, total and smallest nonzero magnitude, norm
// exponent) in one read of the operand: mlx_sgemm.emulation.scheme.line_extremes.
// The scaling needs the last (each line brought to a 2-norm of at most
// 2^bits); the choice of moduli all four.
//
// Both operands in one launch: the first line_stats_blocks(M) blocks take A's
// rows, the others B^T's (sgemm/block_line_stats.cuh), so that a product's
// pre-pass is one node of MLX's graph, not two: each node costs a product
// evaluated alone a few microseconds of host time (docs/performance-log.md,
// "The float16 split in fewer launches").
//
// params: M, N, K, and the longest contiguous lines left to the reader that
// takes them whole (the float16 split, half_split.cu, computes their
// statistics itself; 0 for none): an operand whose lines are contiguous with
// K at most that gets nothing written.
const int m = params[0], n = params[1], K = params[2], whole_k = params[3];
const int a_blocks = sgemm::line_stats_blocks(m);
if (static_cast<int>(blockIdx.x) < a_blocks)
  sgemm::block_line_stats(a, a_strides[0], a_strides[1], m, K, whole_k, a_stats, blockIdx.x);
else
  sgemm::block_line_stats(bt, bt_strides[0], bt_strides[1], n, K, whole_k, b_stats, blockIdx.x - a_blocks);
