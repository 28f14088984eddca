// The Metal standard library every stage needs, and the layout of `params`, the
// int32 input every kernel reads (sizes, tile counts, batch shape, K split).
#ifndef MLX_SGEMM_METAL_PARAMS_H
#define MLX_SGEMM_METAL_PARAMS_H

#include <metal_stdlib>

using namespace metal;

namespace sgemm {

// Layout of `params` (written by mlx_sgemm/problem.py, Plan.params).
enum Param { P_M, P_N, P_K, P_TILES_M, P_TILES_N, P_BATCH_NDIM, P_BATCH_SHAPE };

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_PARAMS_H
