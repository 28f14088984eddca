// Storing a block's results to C: clipped 16-byte stores, pairs rounded to the
// output's type, the small-M kernels' sum of their partial-sum slots, and the NaN
// tile that marks a launch the kernel disagrees with.
#ifndef MLX_SGEMM_EPILOGUE_CUH
#define MLX_SGEMM_EPILOGUE_CUH

#include "operand.cuh"
#include "schedule.cuh"

namespace sgemm {

// Store columns c..c+3 of row r of a row-major matrix of TC (float32, or a
// half type: each value rounded once), dropping what falls outside it; one
// 16-byte (8-byte for halves) store when whole and aligned.
template <typename TC>
__device__ inline void store4_clipped(
    TC* p, int64_t ld, int r, int c, int rows, int cols, bool aligned, float4 v) {
  using E = Element<TC>;
  if (r >= rows) return;
  TC* dst = p + r * ld + c;
  if (aligned && c + 3 < cols) {
    *reinterpret_cast<typename E::Vec4*>(dst) =
        E::pack(E::from_float(v.x), E::from_float(v.y), E::from_float(v.z), E::from_float(v.w));
    return;
  }
  if (c < cols) dst[0] = E::from_float(v.x);
  if (c + 1 < cols) dst[1] = E::from_float(v.y);
  if (c + 2 < cols) dst[2] = E::from_float(v.z);
  if (c + 3 < cols) dst[3] = E::from_float(v.w);
}

// Two neighbouring outputs rounded once to the 16-bit T, as one word (the
// first in its low half, as they lie in memory).
template <typename T>
__device__ inline uint32_t half_pair(float x, float y) {
  static_assert(sizeof(T) == 2, "a pair of halves");
  alignas(4) const T pair[2] = {Element<T>::from_float(x), Element<T>::from_float(y)};
  return *reinterpret_cast<const uint32_t*>(pair);
}

// Store two neighbouring outputs of a row at p, rounded once to the output's
// type: one store of the pair where `aligned` (p a multiple of the pair's
// size) and the second lies inside the row (`second`), else one by one.
template <typename T>
__device__ inline void store_pair(T* p, float x, float y, bool aligned, bool second) {
  using E = Element<T>;
  if (aligned && second) {
    if constexpr (sizeof(T) == 4) {
      *reinterpret_cast<float2*>(p) = make_float2(x, y);
    } else {  // two halves, one word
      *reinterpret_cast<uint32_t*>(p) = half_pair<T>(x, y);
    }
    return;
  }
  p[0] = E::from_float(x);
  if (second) p[1] = E::from_float(y);
}

// Four 8-column blocks of one row of a warp's accumulator fragments (the
// m16n8 layout of wgmma and mma.sync: lane 4 g + q holds columns 2q and 2q + 1
// of each block), rounded pairs `pairs[j]` of block j, stored 16 bytes a lane:
// the quad's four lanes trade pairs (a 4 x 4 transpose by shuffles) so that
// lane q holds block q's 8 columns, and a row's 64 bytes go out as two whole
// 32-byte sectors where pairs of halves would each fill half of one. `row`:
// this lane's row of C at the first block's first column (16-byte aligned);
// `store`: whether its row lies inside C. Every lane of the warp takes part.
__device__ inline void store_row_blocks(uint32_t* row, const uint32_t (&pairs)[4], int q, bool store) {
  uint32_t words[4] = {0, 0, 0, 0};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    // Lane q hands lane q ^ r its pair of block q ^ r, and gets that lane's
    // pair of block q: word q ^ r of block q's 8 columns.
    const int other = q ^ r;
    const uint32_t mine = other == 0 ? pairs[0] : other == 1 ? pairs[1] : other == 2 ? pairs[2] : pairs[3];
    const uint32_t got = __shfl_xor_sync(0xffffffffu, mine, r);
#pragma unroll
    for (int w = 0; w < 4; ++w) words[w] = other == w ? got : words[w];
  }
  if (store) *reinterpret_cast<uint4*>(row + 4 * q) = make_uint4(words[0], words[1], words[2], words[3]);
}

// A small-M block launched with a grid, thread count or shared memory that its
// template disagrees with would leave parts of C unwritten: it writes NaN over
// its tile instead, which no check can miss.
template <int BLOCK_M, int BN, typename TA, typename TB, typename TC>
__device__ inline void write_nan_tile(const Tile<TA, TB, TC>& t) {
  for (int i = threadIdx.x; i < BLOCK_M * BN; i += blockDim.x) {
    const int r = t.row0 + i / BN, col = t.col0 + i % BN;
    if (r < t.M && col < t.N) t.C[r * t.ldc + col] = Element<TC>::from_float(__int_as_float(0x7fc00000));
  }
}

// The small-M kernels' last step: `slots` partial sums of the block's C, each
// BLOCK_M x BN floats row-major, one after another in shared memory, added in
// order (the same order every run) and the block's first `rows` rows stored
// (rounded once to C's type).
template <int BLOCK_M, int BN, int THREADS, typename TA, typename TB, typename TC>
__device__ inline void store_slot_sums(const Tile<TA, TB, TC>& t, const float* slots, int used, int rows) {
  const bool c_aligned = t.ldc % 4 == 0 && is_aligned<sizeof(typename Element<TC>::Vec4)>(t.C);
  for (int i = threadIdx.x; i < rows * BN / 4; i += THREADS) {
    const float4* s = reinterpret_cast<const float4*>(slots) + i;
    float4 sum = s[0];
    for (int q = 1; q < used; ++q) {
      const float4 v = s[q * BLOCK_M * BN / 4];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    store4_clipped(t.C, t.ldc, t.row0 + i / (BN / 4), t.col0 + 4 * (i % (BN / 4)), t.M, t.N,
                   c_aligned, sum);
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_EPILOGUE_CUH
