// An operand as MLX hands it over (a pointer to float, __half or __nv_bfloat16 and two
// strides, any layout), read as float32 (Element converts on load), and which way
// its elements lie in memory (Layout), for the loaders to pick their loads.
#ifndef MLX_SGEMM_OPERAND_CUH
#define MLX_SGEMM_OPERAND_CUH

namespace sgemm {

// Is p a multiple of BYTES (a power of two)?
template <int BYTES>
__device__ inline bool is_aligned(const void* p) {
  return reinterpret_cast<unsigned long long>(p) % BYTES == 0;
}

__device__ inline bool is_16_byte_aligned(const void* p) { return is_aligned<16>(p); }

// An element type an operand may have in memory, and how it becomes float32:
// exactly (every float16 and bfloat16 value is a float32 value), as it is
// loaded, so the kernels compute and accumulate in float32 whatever the
// operands' type. Vec4 is a run of 4 elements as one load: a float4 (16 bytes)
// or 4 halves in a uint2 (8 bytes); from_float rounds a float32 result to T
// (the small-M kernels' outputs). __half and __nv_bfloat16 come from
// cuda_fp16.h and cuda_bf16.h, which MLX's device header includes ahead of
// every custom kernel.
template <typename T>
struct Element;

template <>
struct Element<float> {
  using Vec4 = float4;
  __device__ static float zero() { return 0.0f; }
  __device__ static float to_float(float x) { return x; }
  __device__ static float4 to_float4(const float4& v) { return v; }
  __device__ static float4 pack(float x, float y, float z, float w) { return make_float4(x, y, z, w); }
  __device__ static float from_float(float x) { return x; }
};

template <>
struct Element<__half> {
  using Vec4 = uint2;  // element i in bits 16 (i % 2) .. of word i / 2 (little-endian)
  __device__ static __half zero() { return __ushort_as_half(0); }
  __device__ static float to_float(__half x) { return __half2float(x); }
  __device__ static float4 to_float4(const uint2& v) {
    return make_float4(__half2float(__ushort_as_half(v.x & 0xffffu)),
                       __half2float(__ushort_as_half(v.x >> 16)),
                       __half2float(__ushort_as_half(v.y & 0xffffu)),
                       __half2float(__ushort_as_half(v.y >> 16)));
  }
  __device__ static __half from_float(float x) { return __float2half_rn(x); }  // rounded to nearest
  __device__ static uint2 pack(__half x, __half y, __half z, __half w) {
    return make_uint2(__half_as_ushort(x) | (unsigned(__half_as_ushort(y)) << 16),
                      __half_as_ushort(z) | (unsigned(__half_as_ushort(w)) << 16));
  }
};

template <>
struct Element<__nv_bfloat16> {
  using Vec4 = uint2;  // as Element<__half>
  __device__ static __nv_bfloat16 zero() { return __ushort_as_bfloat16(0); }
  __device__ static float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
  // A bfloat16 is the upper half of the float32 of the same value: one shift
  // or mask each.
  __device__ static float4 to_float4(const uint2& v) {
    return make_float4(__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xffff0000u),
                       __uint_as_float(v.y << 16), __uint_as_float(v.y & 0xffff0000u));
  }
  __device__ static __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }  // rounded to nearest
  __device__ static uint2 pack(__nv_bfloat16 x, __nv_bfloat16 y, __nv_bfloat16 z, __nv_bfloat16 w) {
    return make_uint2(__bfloat16_as_ushort(x) | (unsigned(__bfloat16_as_ushort(y)) << 16),
                      __bfloat16_as_ushort(z) | (unsigned(__bfloat16_as_ushort(w)) << 16));
  }
};

// Which way an operand's elements lie next to each other in memory: along its
// rows (row-major, cs == 1) or down its columns (rs == 1: a transposed view).
enum Layout { ROW_MAJOR, COL_MAJOR };

// A rows x cols operand of element type T as MLX hands it over: element (r, c)
// at p[r * rs + c * cs]. Row-major arrays have cs == 1; transposed views (a.T,
// swapaxes) have rs == 1; other strides (slices, broadcasts) are read element
// by element. No copy is made for any of them. Reads return float32 (Element);
// the raw reads (raw, load4_raw) return the elements as they are in memory, for
// loaders that keep them so until they store them.
template <typename T = float>
struct Operand {
  using Vec4 = typename Element<T>::Vec4;
  const T* p;
  int64_t rs, cs;
  int rows, cols;

  __device__ T raw(int r, int c) const { return p[r * rs + c * cs]; }
  __device__ float operator()(int r, int c) const { return Element<T>::to_float(raw(r, c)); }

  // Element (r, c), or 0 outside the matrix: tiles that overhang the edge read
  // zeros, which add nothing to a dot product.
  __device__ T raw_at(int r, int c) const {
    return (r < rows && c < cols) ? raw(r, c) : Element<T>::zero();
  }
  __device__ float at(int r, int c) const { return Element<T>::to_float(raw_at(r, c)); }

  // The same matrix seen transposed (no data moves).
  __device__ Operand transposed() const { return {p, cs, rs, cols, rows}; }

  __device__ Layout layout() const { return (rs == 1 && cs != 1) ? COL_MAJOR : ROW_MAJOR; }

  // Can 4 neighbours in direction L (along a row / down a column), starting at a
  // multiple of 4, be read with one aligned Vec4 load?
  template <Layout L>
  __device__ bool vectorizes() const {
    return L == ROW_MAJOR ? cs == 1 && rs % 4 == 0 && is_aligned<sizeof(Vec4)>(p)
                          : rs == 1 && cs % 4 == 0 && is_aligned<sizeof(Vec4)>(p);
  }

  // 4 neighbours from (r, c) in direction L that the caller knows are inside
  // the matrix, with vectorizes<L>(): one Vec4 load, nothing checked.
  template <Layout L>
  __device__ Vec4 load4_inside(int r, int c) const {
    return *reinterpret_cast<const Vec4*>(L == ROW_MAJOR ? p + r * rs + c : p + r + c * cs);
  }

  // 4 neighbours from (r, c) in direction L, zero outside the matrix: one Vec4
  // load when `vector` (= vectorizes<L>()) and all 4 are inside.
  template <Layout L>
  __device__ Vec4 load4_raw(int r, int c, bool vector) const {
    if (L == ROW_MAJOR) {
      if (vector && r < rows && c + 3 < cols) return load4_inside<L>(r, c);
      return Element<T>::pack(raw_at(r, c), raw_at(r, c + 1), raw_at(r, c + 2), raw_at(r, c + 3));
    }
    if (vector && c < cols && r + 3 < rows) return load4_inside<L>(r, c);
    return Element<T>::pack(raw_at(r, c), raw_at(r + 1, c), raw_at(r + 2, c), raw_at(r + 3, c));
  }

  // The same 4 as float32.
  template <Layout L>
  __device__ float4 load4(int r, int c, bool vector) const {
    return Element<T>::to_float4(load4_raw<L>(r, c, vector));
  }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_OPERAND_CUH
