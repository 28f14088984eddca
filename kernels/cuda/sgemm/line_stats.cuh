// One line's statistics as the emulations' pre-pass keeps them
// (mlx_sgemm.emulation.scheme.line_extremes): its largest magnitude (NaN where
// it holds a NaN, inf where an inf), the sum of its magnitudes, its smallest
// nonzero magnitude (inf if none) and its norm exponent
// ceil(log2(||line||_2 (1 + 2^-20))) (0 for a line of zeros), stored as
// [4][lines] floats. Squares are summed in float64 (no overflow for any
// float32). A thread takes values one by one; partial statistics of one line
// add across lanes and threads. int8_line_stats.cu keeps them for every line;
// half_split.cu for the lines it reads whole.
#ifndef MLX_SGEMM_LINE_STATS_CUH
#define MLX_SGEMM_LINE_STATS_CUH

namespace sgemm {

// Whether the float16 split (half_split.cu) reads x's lines whole and takes
// their statistics itself: their k are contiguous and K is at most its
// WHOLE_K. int8_line_stats.cu, given the same bound, then leaves them alone.
__device__ inline bool lines_read_whole(int64_t k_stride, int K, int whole_k) {
  return k_stride == 1 && K <= whole_k;
}

// Trivially constructible (it lives in shared memory too): start from empty().
struct LineStats {
  float top, total, low;
  double squares;
  int nan;

  __device__ static LineStats empty() { return {0.0f, 0.0f, __int_as_float(0x7f800000), 0.0, 0}; }

  __device__ void take(float v) {
    const float m = fabsf(v);
    nan |= m != m;
    top = fmaxf(top, m);
    total += m;
    squares = fma(static_cast<double>(v), static_cast<double>(v), squares);
    if (m > 0.0f) low = fminf(low, m);
  }

  __device__ void add(const LineStats& o) {
    top = fmaxf(top, o.top), low = fminf(low, o.low);
    total += o.total, squares += o.squares, nan |= o.nan;
  }

  // Adds the partial statistics of the lanes `last`, 2 `last`, .. 16 apart
  // (the whole warp for last = 1): every lane ends with the sum of its group.
  __device__ void add_lanes(int last) {
    for (int offset = 16; offset >= last; offset /= 2) {
      top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
      low = fminf(low, __shfl_xor_sync(0xffffffffu, low, offset));
      total += __shfl_xor_sync(0xffffffffu, total, offset);
      squares += __shfl_xor_sync(0xffffffffu, squares, offset);
      nan |= __shfl_xor_sync(0xffffffffu, nan, offset);
    }
  }

  // The largest magnitude as stored: NaN where the line holds a NaN.
  __device__ float largest() const { return nan ? __int_as_float(0x7fc00000) : top; }

  __device__ int norm_exponent() const {
    int exponent = 0;
    if (squares > 0.0) {
      const double m = frexp(sqrt(squares) * (1.0 + 0x1p-20), &exponent);
      if (m == 0.5) exponent -= 1;  // an exact power of two
    }
    return exponent;
  }

  // The four statistics as they are stored (see store_line_stats).
  __device__ void values(float (&v)[4]) const {
    v[0] = largest(), v[1] = total, v[2] = low, v[3] = static_cast<float>(norm_exponent());
  }

  __device__ void store(float* stats, int lines, int line) const;
};

// A line's four statistics in a [4][lines] array, to and from registers.
__device__ inline void load_line_stats(const float* stats, int lines, int line, float (&v)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) v[q] = stats[q * lines + line];
}
__device__ inline void store_line_stats(const float (&v)[4], float* stats, int lines, int line) {
#pragma unroll
  for (int q = 0; q < 4; ++q) stats[q * lines + line] = v[q];
}

__device__ inline void LineStats::store(float* stats, int lines, int line) const {
  float v[4];
  values(v);
  store_line_stats(v, stats, lines, line);
}

}  // namespace sgemm

#endif  // MLX_SGEMM_LINE_STATS_CUH
