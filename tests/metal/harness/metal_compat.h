// Metal Shading Language on the CPU: just enough of MSL for the kernels in
// kernels/metal/ to compile with clang and run under runtime.cpp.
//
// It stands where MLX's Metal prelude stands (metal::utils(): <metal_stdlib>
// and `using namespace metal;`) in front of the source MLX generates. Faithful
// where bugs hide:
//   * address spaces are real clang address spaces: a `constant` pointer does
//     not convert to a `device` one, and simdgroup_load refuses `constant`, as
//     Apple's compiler does;
//   * `threadgroup` variables are shared by the threads of one threadgroup
//     (driver.py turns each declaration into a threadgroup_var<> call);
//   * barriers and simdgroup functions block the calling thread (a fiber) until
//     its group arrives, so an ordering bug gives wrong results;
//   * a simdgroup_float8x8 holds two elements per lane, as on Apple GPUs, and
//     every load/store/multiply is one collective operation of all 32 lanes,
//     checked for lanes that diverge or pass different arguments;
//   * simdgroup_async_copy (the declarations of Fast Matrix Multiply on an Apple GPU) is in async_copy.cpp.
// Anything not declared here is unsupported and fails to compile (unknown
// identifier, or a static_assert that says so).
#ifndef METAL_HARNESS_COMPAT_H
#define METAL_HARNESS_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

#ifndef __clang__
#error "metal_compat.h needs clang: Metal's address spaces are clang address spaces"
#endif

// ---- address spaces and function qualifiers --------------------------------
// Numbers as in Apple's AIR (device 1, constant 2, threadgroup 3); what matters
// is that they differ, so clang rejects mixing them.
#define device __attribute__((address_space(1)))
#define constant __attribute__((address_space(2)))
#define threadgroup __attribute__((address_space(3)))
#define thread
#define kernel
#define METAL_FUNC inline

// ---- scalar types ----------------------------------------------------------
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;  // 64-bit, as in Metal (LP64 here)

namespace metal {

namespace mh_detail {
template <bool B, typename T = void>
struct enable_if {};
template <typename T>
struct enable_if<true, T> {
  using type = T;
};
template <typename T>
constexpr bool is_scalar = __is_arithmetic(T);
}  // namespace mh_detail

#define MH_IF_SCALAR(U) typename mh_detail::enable_if<mh_detail::is_scalar<U>, int>::type = 0

// ---- vectors ---------------------------------------------------------------
// vec<T, N> with .x .y .z .w, [i], two-component swizzles (read only),
// element-wise arithmetic and comparisons, Metal's constructors (splat,
// components, mixed scalars and vectors) and explicit conversions.
template <typename T, int N>
struct vec;

namespace mh_detail {
template <typename T>
struct components {
  static constexpr int value = 1;
};
template <typename T, int N>
struct components<vec<T, N>> {
  static constexpr int value = N;
};
}  // namespace mh_detail

// A read-only view of components I... of an N-vector; it converts to
// vec<T, sizeof...(I)>. Nested in the result type so that the result's
// operators are found for it (argument-dependent lookup).
#define MH_SWIZZLE_TYPE                                          \
  template <int Src, int... I>                                   \
  struct swizzle {                                               \
    using result = vec;                                          \
    static constexpr bool mh_swizzle = true;                     \
    T d[Src];                                                    \
    operator vec() const { return vec(d[I]...); }                \
  };

// (Two-component vectors have no swizzles: .x and .y only.)
#define MH_SWIZZLES3(S) \
  typename vec<T, 2>::template swizzle<S, 0, 0> xx; \
  typename vec<T, 2>::template swizzle<S, 0, 1> xy; \
  typename vec<T, 2>::template swizzle<S, 1, 0> yx; \
  typename vec<T, 2>::template swizzle<S, 1, 1> yy; \
  typename vec<T, 2>::template swizzle<S, 0, 2> xz; \
  typename vec<T, 2>::template swizzle<S, 2, 0> zx; \
  typename vec<T, 2>::template swizzle<S, 1, 2> yz; \
  typename vec<T, 2>::template swizzle<S, 2, 1> zy; \
  typename vec<T, 2>::template swizzle<S, 2, 2> zz;
#define MH_SWIZZLES4(S) MH_SWIZZLES3(S) \
  typename vec<T, 2>::template swizzle<S, 0, 3> xw; \
  typename vec<T, 2>::template swizzle<S, 1, 3> yw; \
  typename vec<T, 2>::template swizzle<S, 2, 3> zw; \
  typename vec<T, 2>::template swizzle<S, 3, 3> ww; \
  typename vec<T, 3>::template swizzle<S, 0, 1, 2> xyz;

template <typename T, int N>
struct vec_storage;
template <typename T>
struct vec_storage<T, 2> {
  union {
    T v[2];
    struct { T x, y; };
  };
};
template <typename T>
struct vec_storage<T, 3> {
  union {
    T v[3];
    struct { T x, y, z; };
    MH_SWIZZLES3(3)
  };
};
template <typename T>
struct vec_storage<T, 4> {
  union {
    T v[4];
    struct { T x, y, z, w; };
    MH_SWIZZLES4(4)
  };
};

template <typename T, int N>
struct vec : vec_storage<T, N> {
  static_assert(N >= 2 && N <= 4, "metal_compat: vectors have 2, 3 or 4 components");
  MH_SWIZZLE_TYPE

  vec() = default;
  // Splat: Metal converts a scalar to a vector implicitly.
  template <typename U, MH_IF_SCALAR(U)>
  vec(U s) {
    for (int i = 0; i < N; ++i) this->v[i] = T(s);
  }
  // Components: any mix of scalars and vectors that adds up to N.
  template <typename A, typename B, typename... Rest>
  vec(A a, B b, Rest... rest) {
    static_assert(mh_detail::components<decltype(take(a))>::value +
                          mh_detail::components<decltype(take(b))>::value +
                          (0 + ... + mh_detail::components<decltype(take(rest))>::value) ==
                      N,
                  "metal_compat: vector constructor arguments must add up to the vector size");
    int i = 0;
    put(i, take(a));
    put(i, take(b));
    (put(i, take(rest)), ...);
  }
  // Between element types only explicitly, as in Metal.
  template <typename U>
  explicit vec(const vec<U, N>& o) {
    for (int i = 0; i < N; ++i) this->v[i] = T(o.v[i]);
  }
  template <typename S, bool = S::mh_swizzle>
  explicit vec(const S& s) : vec(typename S::result(s)) {}

  T& operator[](int i) { return this->v[i]; }
  const T& operator[](int i) const { return this->v[i]; }

 private:
  template <typename U, MH_IF_SCALAR(U)>
  static U take(U u) { return u; }
  template <typename U, int M>
  static vec<U, M> take(const vec<U, M>& u) { return u; }
  template <typename S, bool = S::mh_swizzle>
  static typename S::result take(const S& s) { return s; }
  template <typename U, MH_IF_SCALAR(U)>
  void put(int& i, U u) { this->v[i++] = T(u); }
  template <typename U, int M>
  void put(int& i, const vec<U, M>& u) {
    for (int j = 0; j < M; ++j) this->v[i++] = T(u.v[j]);
  }

 public:
#define MH_VEC_BINOP(op)                                                   \
  friend vec operator op(const vec& a, const vec& b) {                     \
    vec r;                                                                 \
    for (int i = 0; i < N; ++i) r.v[i] = T(a.v[i] op b.v[i]);             \
    return r;                                                              \
  }                                                                        \
  friend vec& operator op##=(vec& a, const vec& b) { return a = a op b; }
  MH_VEC_BINOP(+)
  MH_VEC_BINOP(-)
  MH_VEC_BINOP(*)
  MH_VEC_BINOP(/)
#undef MH_VEC_BINOP
#define MH_VEC_INTOP(op)                                                   \
  template <typename X = T, typename = typename mh_detail::enable_if<__is_integral(X)>::type> \
  friend vec operator op(const vec& a, const vec& b) {                     \
    vec r;                                                                 \
    for (int i = 0; i < N; ++i) r.v[i] = T(a.v[i] op b.v[i]);             \
    return r;                                                              \
  }
  MH_VEC_INTOP(%)
  MH_VEC_INTOP(&)
  MH_VEC_INTOP(|)
  MH_VEC_INTOP(^)
  MH_VEC_INTOP(<<)
  MH_VEC_INTOP(>>)
#undef MH_VEC_INTOP
  friend vec operator-(const vec& a) {
    vec r;
    for (int i = 0; i < N; ++i) r.v[i] = T(-a.v[i]);
    return r;
  }
#define MH_VEC_CMP(op)                                                     \
  friend vec<bool, N> operator op(const vec& a, const vec& b) {            \
    vec<bool, N> r;                                                        \
    for (int i = 0; i < N; ++i) r.v[i] = a.v[i] op b.v[i];                 \
    return r;                                                              \
  }
  MH_VEC_CMP(==)
  MH_VEC_CMP(!=)
  MH_VEC_CMP(<)
  MH_VEC_CMP(<=)
  MH_VEC_CMP(>)
  MH_VEC_CMP(>=)
#undef MH_VEC_CMP
};

template <int N>
inline bool all(const vec<bool, N>& b) {
  for (int i = 0; i < N; ++i)
    if (!b.v[i]) return false;
  return true;
}
template <int N>
inline bool any(const vec<bool, N>& b) {
  for (int i = 0; i < N; ++i)
    if (b.v[i]) return true;
  return false;
}

// ---- math ------------------------------------------------------------------
// Scalar versions, and element-wise ones for vectors of the same type.
template <typename T, MH_IF_SCALAR(T)>
inline T min(T a, T b) { return b < a ? b : a; }
template <typename T, MH_IF_SCALAR(T)>
inline T max(T a, T b) { return a < b ? b : a; }
template <typename T, MH_IF_SCALAR(T)>
inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
inline float fmin(float a, float b) { return __builtin_fminf(a, b); }
inline float fmax(float a, float b) { return __builtin_fmaxf(a, b); }
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline float abs(float x) { return __builtin_fabsf(x); }
inline float fabs(float x) { return __builtin_fabsf(x); }
inline int abs(int x) { return x < 0 ? -x : x; }
inline float sqrt(float x) { return __builtin_sqrtf(x); }
inline float rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
inline float exp(float x) { return __builtin_expf(x); }
inline float exp2(float x) { return __builtin_exp2f(x); }
inline float log(float x) { return __builtin_logf(x); }
inline float floor(float x) { return __builtin_floorf(x); }
inline float ceil(float x) { return __builtin_ceilf(x); }
inline float trunc(float x) { return __builtin_truncf(x); }
inline float round(float x) { return __builtin_roundf(x); }
inline bool isnan(float x) { return __builtin_isnan(x); }
inline bool isinf(float x) { return __builtin_isinf(x); }
inline bool isfinite(float x) { return __builtin_isfinite(x); }
template <typename T, int N>
inline vec<T, N> min(vec<T, N> a, vec<T, N> b) {
  for (int i = 0; i < N; ++i) a.v[i] = min(a.v[i], b.v[i]);
  return a;
}
template <typename T, int N>
inline vec<T, N> max(vec<T, N> a, vec<T, N> b) {
  for (int i = 0; i < N; ++i) a.v[i] = max(a.v[i], b.v[i]);
  return a;
}
template <typename T, int N>
inline vec<T, N> fma(vec<T, N> a, vec<T, N> b, vec<T, N> c) {
  for (int i = 0; i < N; ++i) a.v[i] = fma(a.v[i], b.v[i], c.v[i]);
  return a;
}
template <typename T, MH_IF_SCALAR(T)>
inline T select(T a, T b, bool c) { return c ? b : a; }

template <typename To, typename From>
inline To as_type(From x) {
  static_assert(sizeof(To) == sizeof(From), "as_type: sizes differ");
  To r;
  __builtin_memcpy(&r, &x, sizeof(To));
  return r;
}

// ---- synchronization -------------------------------------------------------
enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
inline mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}

// The extra defaulted parameter records the call site: threads that meet at
// different barriers are reported (Metal requires all to reach the same one).
inline void threadgroup_barrier(mem_flags flags, unsigned line = __builtin_LINE()) {
  mh_threadgroup_barrier(unsigned(flags), line);
}
inline void simdgroup_barrier(mem_flags, unsigned line = __builtin_LINE()) {
  if (mh_simd_collective("simdgroup_barrier", line, nullptr, 0)) mh_simd_release();
}

// ---- simdgroup matrices ----------------------------------------------------
// Section 6.7 of the Metal Shading Language specification. The spec leaves
// unspecified which lane holds which elements; this uses the layout MLX's
// steel GEMM relies on (mlx/backend/metal/kernels/steel/gemm/mma.h,
// get_coord): lane l holds row (l/4 & 4) + (l/2)%4, columns c and c+1 with
// c = (l/4 & 2)*2 + (l%2)*2.
namespace mh_detail {
inline void lane_coord(uint32_t lane, int& row, int& col) {
  const int q = int(lane / 4);
  row = (q & 4) + int(lane / 2) % 4;
  col = (q & 2) * 2 + int(lane % 2) * 2;
}
}  // namespace mh_detail

template <typename T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(__is_same(T, float) && Cols == 8 && Rows == 8,
                "metal_compat: only simdgroup_float8x8 is modelled "
                "(half, bfloat and other shapes are not)");
  vec<T, 2> elements;  // this lane's two elements

  // Metal leaves a default-constructed matrix undefined: NaN here, so a
  // kernel that accumulates into one without clearing it gets NaN out.
  simdgroup_matrix() : elements(__builtin_nanf("")) {}
  // A diagonal matrix with the given value.
  explicit simdgroup_matrix(T dval) {
    int r, c;
    mh_detail::lane_coord(mh_lane(), r, c);
    elements = vec<T, 2>(r == c ? dval : T(0), r == c + 1 ? dval : T(0));
  }
  thread vec<T, 2>& thread_elements() { return elements; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;

template <typename T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.elements = vec<T, 2>(value);
  return m;
}

namespace mh_detail {
// What one lane passes to a collective load or store.
template <typename P>
struct transfer_args {
  P ptr;
  ulong elements_per_row;
  ulong ox, oy;
  bool transpose;
  vec<float, 2>* elements;
};

// The lanes' pointers, strides, origins and transpose flags must agree: the
// hardware operation has one of each.
template <typename P>
inline void check_uniform(const char* op, unsigned line, void* const* lanes) {
  const transfer_args<P>* first = static_cast<const transfer_args<P>*>(lanes[0]);
  for (int l = 1; l < 32; ++l) {
    const transfer_args<P>* a = static_cast<const transfer_args<P>*>(lanes[l]);
    if (a->ptr != first->ptr || a->elements_per_row != first->elements_per_row ||
        a->ox != first->ox || a->oy != first->oy || a->transpose != first->transpose)
      mh_fail("nonuniform", line,
              "%s: lane %d passes (ptr %p, elements_per_row %lu, origin (%lu, %lu), "
              "transpose %d) but lane 0 passes (ptr %p, elements_per_row %lu, origin "
              "(%lu, %lu), transpose %d); the arguments must be the same in all lanes",
              op, l, (const void*)a->ptr, a->elements_per_row, a->ox, a->oy, a->transpose,
              (const void*)first->ptr, first->elements_per_row, first->ox, first->oy,
              first->transpose);
  }
}

// Offset of matrix element (r, c): the 8x8 block starts at column ox, row oy
// of a row-major source with elements_per_row columns; transposed, element
// (r, c) of the matrix is element (c, r) of that block.
template <typename P>
inline ulong element_offset(const transfer_args<P>& a, int r, int c) {
  if (a.transpose) return (a.oy + ulong(c)) * a.elements_per_row + a.ox + ulong(r);
  return (a.oy + ulong(r)) * a.elements_per_row + a.ox + ulong(c);
}

template <typename P>
inline void load(vec<float, 2>& d, P src, ulong epr, vec<ulong, 2> origin, bool transpose,
                 unsigned line) {
  transfer_args<P> mine{src, epr, origin.x, origin.y, transpose, &d};
  void* const* lanes = mh_simd_collective("simdgroup_load", line, &mine, 1);
  if (!lanes) return;  // the last lane to arrive has done it for us
  check_uniform<P>("simdgroup_load", line, lanes);
  for (uint32_t l = 0; l < 32; ++l) {
    const transfer_args<P>& a = *static_cast<const transfer_args<P>*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    const float e0 = src[element_offset(a, r, c)];
    const float e1 = src[element_offset(a, r, c + 1)];
    *a.elements = vec<float, 2>(e0, e1);
  }
  mh_simd_release();
}

template <typename P>
inline void store(const vec<float, 2>& s, P dst, ulong epr, vec<ulong, 2> origin,
                  bool transpose, unsigned line) {
  transfer_args<P> mine{dst, epr, origin.x, origin.y, transpose,
                        const_cast<vec<float, 2>*>(&s)};
  void* const* lanes = mh_simd_collective("simdgroup_store", line, &mine, 1);
  if (!lanes) return;
  check_uniform<P>("simdgroup_store", line, lanes);
  for (uint32_t l = 0; l < 32; ++l) {
    const transfer_args<P>& a = *static_cast<const transfer_args<P>*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    dst[element_offset(a, r, c)] = a.elements->x;
    dst[element_offset(a, r, c + 1)] = a.elements->y;
  }
  mh_simd_release();
}

struct mma_args {
  vec<float, 2>* d;
  const vec<float, 2>* a;
  const vec<float, 2>* b;
  const vec<float, 2>* c;  // null for simdgroup_multiply
};

// d = a * b (+ c), with each operand gathered from the 32 lanes that hold it.
inline void multiply(const char* op, mma_args mine, unsigned line) {
  void* const* lanes = mh_simd_collective(op, line, &mine, 1);
  if (!lanes) return;
  float A[8][8], B[8][8], C[8][8];
  for (uint32_t l = 0; l < 32; ++l) {
    const mma_args& m = *static_cast<const mma_args*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    for (int e = 0; e < 2; ++e) {
      A[r][c + e] = (*m.a)[e];
      B[r][c + e] = (*m.b)[e];
      C[r][c + e] = m.c ? (*m.c)[e] : 0.0f;
    }
  }
  // All inputs are gathered before any output is written: d may alias a, b, c.
  for (uint32_t l = 0; l < 32; ++l) {
    const mma_args& m = *static_cast<const mma_args*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    for (int e = 0; e < 2; ++e) {
      float sum = C[r][c + e];
      for (int k = 0; k < 8; ++k) sum = __builtin_fmaf(A[r][k], B[k][c + e], sum);
      (*m.d)[e] = sum;
    }
  }
  mh_simd_release();
}
}  // namespace mh_detail

// Loads and stores take device or threadgroup pointers only; a `constant`
// pointer fails to compile, as on Apple's compiler.
#define MH_SIMDGROUP_TRANSFER(SPACE)                                                \
  template <typename T, int Cols, int Rows>                                         \
  inline void simdgroup_load(thread simdgroup_matrix<T, Cols, Rows>& d,             \
                             const SPACE T* src, ulong elements_per_row = Cols,     \
                             vec<ulong, 2> matrix_origin = 0,                       \
                             bool transpose_matrix = false,                         \
                             unsigned line = __builtin_LINE()) {                    \
    mh_detail::load(d.elements, src, elements_per_row, matrix_origin,               \
                    transpose_matrix, line);                                        \
  }                                                                                 \
  template <typename T, int Cols, int Rows>                                         \
  inline void simdgroup_store(thread simdgroup_matrix<T, Cols, Rows> a, SPACE T* dst, \
                              ulong elements_per_row = Cols,                        \
                              vec<ulong, 2> matrix_origin = 0,                      \
                              bool transpose_matrix = false,                        \
                              unsigned line = __builtin_LINE()) {                   \
    mh_detail::store(a.elements, dst, elements_per_row, matrix_origin,              \
                     transpose_matrix, line);                                       \
  }
MH_SIMDGROUP_TRANSFER(device)
MH_SIMDGROUP_TRANSFER(threadgroup)
#undef MH_SIMDGROUP_TRANSFER

template <typename T>
inline void simdgroup_multiply_accumulate(thread simdgroup_matrix<T, 8, 8>& d,
                                          const thread simdgroup_matrix<T, 8, 8>& a,
                                          const thread simdgroup_matrix<T, 8, 8>& b,
                                          const thread simdgroup_matrix<T, 8, 8>& c,
                                          unsigned line = __builtin_LINE()) {
  mh_detail::multiply("simdgroup_multiply_accumulate",
                      {&d.elements, &a.elements, &b.elements, &c.elements}, line);
}
template <typename T>
inline void simdgroup_multiply(thread simdgroup_matrix<T, 8, 8>& d,
                               const thread simdgroup_matrix<T, 8, 8>& a,
                               const thread simdgroup_matrix<T, 8, 8>& b,
                               unsigned line = __builtin_LINE()) {
  mh_detail::multiply("simdgroup_multiply", {&d.elements, &a.elements, &b.elements, nullptr},
                      line);
}

}  // namespace metal

// ---- vector type names -------------------------------------------------------
#define MH_VECTOR_NAMES(T, name) \
  typedef metal::vec<T, 2> name##2; \
  typedef metal::vec<T, 3> name##3; \
  typedef metal::vec<T, 4> name##4;
MH_VECTOR_NAMES(float, float)
MH_VECTOR_NAMES(int, int)
MH_VECTOR_NAMES(uint, uint)
MH_VECTOR_NAMES(short, short)
MH_VECTOR_NAMES(ushort, ushort)
MH_VECTOR_NAMES(char, char)
MH_VECTOR_NAMES(uchar, uchar)
MH_VECTOR_NAMES(long, long)
MH_VECTOR_NAMES(ulong, ulong)
MH_VECTOR_NAMES(bool, bool)
#undef MH_VECTOR_NAMES

// ---- threadgroup variables ---------------------------------------------------
// driver.py rewrites `threadgroup T name[dims];` into
//   threadgroup T (&name)[dims] = metal_harness::threadgroup_var<T[dims], ID>();
// C++ has no storage shared by a group of threads: this hands every thread of
// the running threadgroup the same guarded, poisoned block.
namespace metal_harness {
template <typename T, int ID>
inline threadgroup T& threadgroup_var(unsigned line = __builtin_LINE()) {
  static mh_tg_slot slot;
  return *(threadgroup T*)mh_threadgroup_alloc(&slot, sizeof(T), line);
}

inline uint3 attr3(const uint32_t (&v)[3]) { return uint3(v[0], v[1], v[2]); }
}  // namespace metal_harness

// ---- simdgroup_async_copy ---------------------------------------------------------
// Not declared here: as on Apple's compiler, a kernel declares the AIR
// intrinsics itself, at namespace scope (kernels/metal/sgemm/async_copy.h). async_copy.cpp defines them
// under the same __asm symbol names in its own translation unit, so the
// kernel's declarations bind to them at link time.

using namespace metal;

#endif  // METAL_HARNESS_COMPAT_H
