// How the emulations' tile writers (int8_residues.cu, half_split.cu) read one
// operand's lines and scale them: x is a lines x K view with any strides (A's
// rows, or B^T's rows, i.e. B's columns), a block covers LINES lines by one
// k-tile of K_TILE values, and a thread takes chunks of CHUNK consecutive k of
// one line. Where the lines are contiguous and k is not (B row-major, read as
// B^T), the block first stages its K_TILE x LINES values in shared memory,
// each k's LINES values read as contiguous bytes; otherwise a chunk is read
// from memory, as float4s where k is contiguous and aligned.
#ifndef MLX_SGEMM_LINE_CHUNKS_CUH
#define MLX_SGEMM_LINE_CHUNKS_CUH

#include "batched_loads.cuh"

namespace sgemm {

// N values (a multiple of 4) from 16-byte aligned memory, global or shared,
// as float4s.
template <int N>
__device__ inline void load_float4s(float (&v)[N], const float* from) {
#pragma unroll
  for (int q = 0; q < N / 4; ++q) {
    const float4 f = reinterpret_cast<const float4*>(from)[q];
    v[4 * q] = f.x, v[4 * q + 1] = f.y, v[4 * q + 2] = f.z, v[4 * q + 3] = f.w;
  }
}

// Where x's lines are contiguous and k is not: whether its n lines from line0
// are all there and their values at each k one 16-byte aligned run, read as
// float4s of 4 lines.
__device__ inline bool runs_across_are_float4s(const float* x, int line0, int n, int lines, int64_t k_stride) {
  return line0 + n <= lines && k_stride % 4 == 0 && reinterpret_cast<uintptr_t>(x + line0) % 16 == 0;
}

template <int LINES, int K_TILE>
struct LineBlock {
  // [k][line], padded a line: the staging writes meet no bank conflicts.
  using Staging = float[K_TILE][LINES + 1];

  const float* x;
  int lines, K, line0, k_base;
  int64_t line_stride, k_stride;
  bool across;  // the lines are contiguous, k is not: staged

  __device__ LineBlock(const float* x_, int lines_, int K_, int64_t line_stride_, int64_t k_stride_, int line0_,
                       int k_base_)
      : x(x_), lines(lines_), K(K_), line0(line0_), k_base(k_base_), line_stride(line_stride_),
        k_stride(k_stride_), across(line_stride_ == 1 && k_stride_ != 1) {}

  // Every thread of the block calls it: a barrier where the block stages.
  // Each k's LINES values as float4s where the block's lines are all there
  // and every k's run is 16-byte aligned (a quarter of the load instructions,
  // all in flight at once), else one by one.
  __device__ void stage(Staging& staged) const {
    if (!across) return;
    const float* const first = x + line0;
    if (runs_across_are_float4s(x, line0, LINES, lines, k_stride)) {
      // A 256-thread block's loads all in flight at once; past K, the last k's
      // values loaded and zeros stored.
      constexpr int BATCH = K_TILE * LINES / 4 / 256 > 1 ? K_TILE * LINES / 4 / 256 : 1;
      for_each_in_batches<BATCH>(
          threadIdx.x, K_TILE * LINES / 4, blockDim.x,
          [&](int i) {
            const int k = min(k_base + i / (LINES / 4), K - 1), l = 4 * (i % (LINES / 4));
            return *reinterpret_cast<const float4*>(first + static_cast<int64_t>(k) * k_stride + l);
          },
          [&](float4 v, int i) {
            const int k = i / (LINES / 4), l = 4 * (i % (LINES / 4));
            if (k_base + k >= K) v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            staged[k][l] = v.x, staged[k][l + 1] = v.y, staged[k][l + 2] = v.z, staged[k][l + 3] = v.w;
          });
    } else {
#pragma unroll 8  // several loads in flight
      for (int i = threadIdx.x; i < K_TILE * LINES; i += blockDim.x) {
        const int k = i / LINES, l = i % LINES;
        const bool in = line0 + l < lines && k_base + k < K;
        staged[k][l] = in ? x[(line0 + l) + static_cast<int64_t>(k_base + k) * k_stride] : 0.0f;
      }
    }
    __syncthreads();
  }

  // Chunk `chunk` of the block's line l: CHUNK values from k_base + CHUNK chunk,
  // zeros past K, and zeros throughout for a line that is not `live`.
  template <int CHUNK>
  __device__ void load(float (&v)[CHUNK], int l, int chunk, bool live, const Staging& staged) const {
    const int k0 = k_base + CHUNK * chunk;
    const float* const row = x + (line0 + l) * line_stride;
    if (!live) {
#pragma unroll
      for (int e = 0; e < CHUNK; ++e) v[e] = 0.0f;
    } else if (across) {
#pragma unroll
      for (int e = 0; e < CHUNK; ++e) v[e] = staged[CHUNK * chunk + e][l];
    } else if (k_stride == 1 && k0 + CHUNK <= K && reinterpret_cast<uintptr_t>(row + k0) % 16 == 0) {
      load_float4s(v, row + k0);
    } else {
#pragma unroll
      for (int e = 0; e < CHUNK; ++e) v[e] = k0 + e < K ? row[(k0 + e) * k_stride] : 0.0f;
    }
  }
};

// v x 2^shift: a multiplication by the power of two where 2^shift is a normal
// float (exact; a product that falls below 2^-126 rounds as ldexpf would),
// ldexpf for the rare shifts past that range.
template <int N>
__device__ inline void scale_by_power_of_two(float (&v)[N], int shift) {
  const bool normal_shift = shift >= -126 && shift <= 127;
  const float power = normal_shift ? __int_as_float((shift + 127) << 23) : 1.0f;
#pragma unroll
  for (int e = 0; e < N; ++e) v[e] = normal_shift ? v[e] * power : ldexpf(v[e], shift);
}

}  // namespace sgemm

#endif  // MLX_SGEMM_LINE_CHUNKS_CUH
