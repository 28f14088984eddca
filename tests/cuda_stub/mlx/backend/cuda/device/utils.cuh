// Stand-in for MLX's own mlx/backend/cuda/device/utils.cuh, which MLX's CUDA
// backend prepends to every custom kernel but keeps inside libmlx (it is not
// installed as a file). Our kernels use only the Shape and Strides types from it;
// these are MLX's definitions (config.h: MAX_NDIM 10; utils.cuh).
#pragma once

#include <cuda/std/array>
#include <cstdint>

#define MAX_NDIM 10

namespace mlx::core::cu {
using Shape = cuda::std::array<int32_t, MAX_NDIM>;
using Strides = cuda::std::array<int64_t, MAX_NDIM>;
}  // namespace mlx::core::cu
