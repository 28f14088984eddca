// An operand as MLX hands it over (a pointer and two strides, any layout), and
// which way its elements lie in memory (Layout), for the loaders to pick their loads.
#ifndef MLX_SGEMM_OPERAND_CUH
#define MLX_SGEMM_OPERAND_CUH

namespace sgemm {

__device__ inline bool is_16_byte_aligned(const float* p) {
  return reinterpret_cast<unsigned long long>(p) % 16 == 0;
}

// Which way an operand's elements lie next to each other in memory: along its
// rows (row-major, cs == 1) or down its columns (rs == 1: a transposed view).
enum Layout { ROW_MAJOR, COL_MAJOR };

// A rows x cols operand as MLX hands it over: element (r, c) at p[r * rs + c * cs].
// Row-major arrays have cs == 1; transposed views (a.T, swapaxes) have rs == 1;
// other strides (slices, broadcasts) are read element by element. No copy is
// made for any of them.
struct Operand {
  const float* p;
  int64_t rs, cs;
  int rows, cols;

  __device__ float operator()(int r, int c) const { return p[r * rs + c * cs]; }

  // Element (r, c), or 0 outside the matrix: tiles that overhang the edge read
  // zeros, which add nothing to a dot product.
  __device__ float at(int r, int c) const {
    return (r < rows && c < cols) ? (*this)(r, c) : 0.0f;
  }

  // The same matrix seen transposed (no data moves).
  __device__ Operand transposed() const { return {p, cs, rs, cols, rows}; }

  __device__ Layout layout() const { return (rs == 1 && cs != 1) ? COL_MAJOR : ROW_MAJOR; }

  // Can 4 neighbours in direction L (along a row / down a column), starting at a
  // multiple of 4, be read with one aligned 16-byte load?
  template <Layout L>
  __device__ bool vectorizes() const {
    return L == ROW_MAJOR ? cs == 1 && rs % 4 == 0 && is_16_byte_aligned(p)
                          : rs == 1 && cs % 4 == 0 && is_16_byte_aligned(p);
  }

  // 4 neighbours from (r, c) in direction L, zero outside the matrix: one
  // 16-byte load when `vector` (= vectorizes<L>()) and all 4 are inside.
  template <Layout L>
  __device__ float4 load4(int r, int c, bool vector) const {
    if (L == ROW_MAJOR) {
      if (vector && r < rows && c + 3 < cols) return *reinterpret_cast<const float4*>(p + r * rs + c);
      return make_float4(at(r, c), at(r, c + 1), at(r, c + 2), at(r, c + 3));
    }
    if (vector && c < cols && r + 3 < rows) return *reinterpret_cast<const float4*>(p + r + c * cs);
    return make_float4(at(r, c), at(r + 1, c), at(r + 2, c), at(r + 3, c));
  }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_OPERAND_CUH
