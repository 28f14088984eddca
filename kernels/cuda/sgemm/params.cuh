// What the host hands every kernel besides the operands: the layout of `params`
// (mlx_sgemm/problem.py), the launch bounds a spec asks for, the launch's shared memory.
#ifndef MLX_SGEMM_PARAMS_CUH
#define MLX_SGEMM_PARAMS_CUH

// How a stage file becomes a kernel (the signature MLX writes around it, NVRTC
// without the C++ standard library): kernels/cuda/README.md.

// Launch bounds. MLX writes the kernel's signature, leaving no place for
// __launch_bounds__, yet without it ptxas may spend so many registers per thread
// that fewer blocks fit on an SM than the kernel was designed for. __global__ is
// itself a macro of CUDA's headers (host_defines.h), so a spec that asks for
// min_blocks gets it redefined here to carry the bounds into the one kernel of
// this source. SGEMM_MAX_THREADS / SGEMM_MIN_BLOCKS come from mlx_sgemm/specs.py.
// Every stage has it before its signature: locate_tile (schedule.cuh) includes this file.
#if defined(SGEMM_MIN_BLOCKS)
#undef __global__
#define __global__ \
  __location__(global) __launch_bounds__(SGEMM_MAX_THREADS, SGEMM_MIN_BLOCKS)
#endif

namespace sgemm {

// Layout of `params` (written by mlx_sgemm/problem.py, Plan.params).
enum Param { P_M, P_N, P_K, P_TILES_M, P_TILES_N, P_BATCH_NDIM, P_BATCH_SHAPE };

// Layout of the INT8 residue GEMM's `params` (kernels/cuda/int8_residue_gemm.cu,
// written by mlx_sgemm/emulation/residue_gemm.py): sizes, padded K, the tile grid.
enum ResidueParam { R_M, R_N, R_KP, R_TILES_M, R_TILES_N };

// Where the tensor maps (A's, B's in panels, B^T's, A^T's; 32 words each) start in `params`
// (after the batch shape and the split length: mlx_sgemm/problem.py).
constexpr int P_TENSOR_MAPS = 16;
// How many blocks share one output matrix in a persistent kernel (half_wgmma),
// in the word before the maps, past the longest batch shape and the split length.
constexpr int P_BLOCKS_PER_MATRIX = P_TENSOR_MAPS - 1;
constexpr int TENSOR_MAP_WORDS = 32;

// The dynamic shared memory this block was launched with, in bytes.
__device__ inline uint32_t dynamic_shared_bytes() {
  uint32_t bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;\n" : "=r"(bytes));
  return bytes;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_PARAMS_CUH
