// Stand-in for MLX's mlx/backend/cuda/device/utils.cuh, which MLX's CUDA backend
// prepends to every custom kernel but keeps inside libmlx (it is not installed as
// a file). Same includes as MLX 0.32's, and the two types our kernels use from it
// (Shape, Strides: config.h's MAX_NDIM 10), so a kernel that leans on anything
// else of MLX's fails here first.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/array>
#include <cuda/std/limits>
#include <cuda/std/tuple>

#define MAX_NDIM 10

namespace mlx::core::cu {
using Shape = cuda::std::array<int32_t, MAX_NDIM>;
using Strides = cuda::std::array<int64_t, MAX_NDIM>;
}  // namespace mlx::core::cu
