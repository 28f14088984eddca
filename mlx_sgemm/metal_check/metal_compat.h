// Metal Shading Language on the CPU: enough of MSL for the kernels in
// kernels/metal/ and for MLX's documented custom kernels to compile with
// clang and run under the runtime (scheduler.cpp and its neighbours).
//
// It stands where MLX's Metal prelude stands (metal::utils(): <metal_stdlib>,
// MLX's kernels/utils.h, and `using namespace metal;`) in front of the source
// MLX generates. Faithful where bugs hide:
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
//   * simdgroup_async_copy (the declarations of Fast Matrix Multiply on an Apple GPU) is in async_copy.cpp;
//   * SIMD-group functions (simd_sum, simd_shuffle, ...) are in metal_simd.h,
//     atomics in metal_atomic.h, MLX's indexing helpers in mlx_utils.h.
// Anything not declared here is unsupported and fails to compile (unknown
// identifier, or a static_assert that says so). Floating-point math is IEEE
// (MLX's default math_mode "safe"); half is clang's _Float16, bfloat __bf16.
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
typedef _Float16 half;
typedef __bf16 bfloat;
// MLX's names (get_type_string) for the types of half arrays.
typedef half float16_t;
typedef bfloat bfloat16_t;

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
    template <typename Self>                                     \
    operator vec(this const Self& self) { return vec(self.d[I]...); } \
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
  vec(const A& a, const B& b, const Rest&... rest) {
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
  explicit vec(vec<U, N> o) {
    for (int i = 0; i < N; ++i) this->v[i] = T(o.v[i]);
  }
  // From a swizzle of another element type (`float2(h.zw)`): its conversion
  // (copy-initialization, which this explicit constructor takes no part in),
  // then the element-wise one.
  template <typename S, bool = S::mh_swizzle>
  explicit vec(const S& s) {
    const typename S::result r = s;
    for (int i = 0; i < N; ++i) this->v[i] = T(r.v[i]);
  }

  // A vector in device, constant or threadgroup memory (`float4 v = p[i];`,
  // `device float4* p`): C++ binds no reference of the generic address space
  // to it, so copies from each named one are spelled out, and the members
  // that assign or index take their object with `this` deduced (C++23), in
  // whatever address space it is (`p[i] = v;`, `tile[j][k] += v;`).
  vec(const vec&) = default;
  template <int AS>
  vec(const __attribute__((address_space(AS))) vec& o) {
    for (int i = 0; i < N; ++i) this->v[i] = o.v[i];
  }
  template <typename Self>
  Self& operator=(this Self& self, vec o) {
    for (int i = 0; i < N; ++i) self.v[i] = o.v[i];
    return self;
  }
  template <typename Self>
  auto& operator[](this Self& self, int i) { return self.v[i]; }

 private:
  template <typename U, MH_IF_SCALAR(U)>
  static U take(U u) { return u; }
  template <typename U, int M>
  static vec<U, M> take(vec<U, M> u) { return u; }
  template <typename S, bool = S::mh_swizzle>
  static typename S::result take(const S& s) { return s; }
  template <typename U, MH_IF_SCALAR(U)>
  void put(int& i, U u) { this->v[i++] = T(u); }
  template <typename U, int M>
  void put(int& i, const vec<U, M>& u) {
    for (int j = 0; j < M; ++j) this->v[i++] = T(u.v[j]);
  }

 public:
// Operands by value: a vector in any address space, or a scalar (splat).
#define MH_VEC_BINOP(op)                                                   \
  friend vec operator op(vec a, vec b) {                                   \
    vec r;                                                                 \
    for (int i = 0; i < N; ++i) r.v[i] = T(a.v[i] op b.v[i]);             \
    return r;                                                              \
  }                                                                        \
  template <typename Self>                                                 \
  Self& operator op##=(this Self& self, vec b) {                           \
    for (int i = 0; i < N; ++i) self.v[i] = T(self.v[i] op b.v[i]);       \
    return self;                                                           \
  }
  MH_VEC_BINOP(+)
  MH_VEC_BINOP(-)
  MH_VEC_BINOP(*)
  MH_VEC_BINOP(/)
#undef MH_VEC_BINOP
#define MH_VEC_INTOP(op)                                                   \
  template <typename X = T, typename = typename mh_detail::enable_if<__is_integral(X)>::type> \
  friend vec operator op(vec a, vec b) {                                   \
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
  friend vec operator-(vec a) {
    vec r;
    for (int i = 0; i < N; ++i) r.v[i] = T(-a.v[i]);
    return r;
  }
#define MH_VEC_CMP(op)                                                     \
  friend vec<bool, N> operator op(vec a, vec b) {                          \
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
// Scalar versions, and element-wise ones for vectors. float is computed with
// clang's builtins; half and bfloat through float, rounded back.
template <typename T, MH_IF_SCALAR(T)>
inline T min(T a, T b) { return b < a ? b : a; }
template <typename T, MH_IF_SCALAR(T)>
inline T max(T a, T b) { return a < b ? b : a; }
template <typename T, MH_IF_SCALAR(T)>
inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
inline float fmin(float a, float b) { return __builtin_fminf(a, b); }
inline float fmax(float a, float b) { return __builtin_fmaxf(a, b); }
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline int abs(int x) { return x < 0 ? -x : x; }
inline long abs(long x) { return x < 0 ? -x : x; }
inline float saturate(float x) { return clamp(x, 0.0f, 1.0f); }
inline float mix(float x, float y, float a) { return x + (y - x) * a; }
inline float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; }
inline float rsqrt_f(float x) { return 1.0f / __builtin_sqrtf(x); }
inline float exp10_f(float x) { return __builtin_powf(10.0f, x); }
inline float pow(float x, float y) { return __builtin_powf(x, y); }
inline float powr(float x, float y) { return __builtin_powf(x, y); }
inline float fmod(float x, float y) { return __builtin_fmodf(x, y); }
inline float atan2(float y, float x) { return __builtin_atan2f(y, x); }
inline float copysign(float x, float y) { return __builtin_copysignf(x, y); }

// name(x) for float, half, bfloat and their vectors.
#define MH_UNARY_MATH(name, fn)                                                   \
  inline float name(float x) { return fn(x); }                                    \
  inline half name(half x) { return half(fn(float(x))); }                         \
  inline bfloat name(bfloat x) { return bfloat(fn(float(x))); }                   \
  template <typename T, int N>                                                    \
  inline vec<T, N> name(vec<T, N> v) {                                            \
    for (int i = 0; i < N; ++i) v.v[i] = name(v.v[i]);                            \
    return v;                                                                     \
  }
#define MH_MATH_FUNCTIONS(X)                                                      \
  X(abs, __builtin_fabsf) X(fabs, __builtin_fabsf) X(sqrt, __builtin_sqrtf)       \
  X(rsqrt, rsqrt_f) X(exp, __builtin_expf) X(exp2, __builtin_exp2f)               \
  X(exp10, exp10_f) X(log, __builtin_logf) X(log2, __builtin_log2f)               \
  X(log10, __builtin_log10f) X(sin, __builtin_sinf) X(cos, __builtin_cosf)        \
  X(tan, __builtin_tanf) X(asin, __builtin_asinf) X(acos, __builtin_acosf)        \
  X(atan, __builtin_atanf) X(sinh, __builtin_sinhf) X(cosh, __builtin_coshf)      \
  X(tanh, __builtin_tanhf) X(erf, __builtin_erff) X(floor, __builtin_floorf)      \
  X(ceil, __builtin_ceilf) X(trunc, __builtin_truncf) X(round, __builtin_roundf)  \
  X(rint, __builtin_rintf) X(expm1, __builtin_expm1f)
MH_MATH_FUNCTIONS(MH_UNARY_MATH)
#undef MH_UNARY_MATH

inline bool isnan(float x) { return __builtin_isnan(x); }
inline bool isinf(float x) { return __builtin_isinf(x); }
inline bool isfinite(float x) { return __builtin_isfinite(x); }
inline bool isnan(half x) { return __builtin_isnan(float(x)); }
inline bool isinf(half x) { return __builtin_isinf(float(x)); }
inline bool isfinite(half x) { return __builtin_isfinite(float(x)); }
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
template <typename T, int N>
inline T dot(vec<T, N> a, vec<T, N> b) {
  T sum = T(0);
  for (int i = 0; i < N; ++i) sum += a.v[i] * b.v[i];
  return sum;
}
template <typename T, MH_IF_SCALAR(T)>
inline T select(T a, T b, bool c) { return c ? b : a; }
template <typename T, int N>
inline vec<T, N> select(vec<T, N> a, vec<T, N> b, vec<bool, N> c) {
  for (int i = 0; i < N; ++i) a.v[i] = c.v[i] ? b.v[i] : a.v[i];
  return a;
}
template <typename T, int N>
inline vec<T, N> select(vec<T, N> a, vec<T, N> b, bool c) { return c ? b : a; }

// Element-wise clamp, with vector or scalar bounds.
template <typename T, int N>
inline vec<T, N> clamp(vec<T, N> x, vec<T, N> lo, vec<T, N> hi) {
  for (int i = 0; i < N; ++i) x.v[i] = clamp(x.v[i], lo.v[i], hi.v[i]);
  return x;
}
template <typename T, int N, typename U, MH_IF_SCALAR(U)>
inline vec<T, N> clamp(vec<T, N> x, U lo, U hi) {
  return clamp(x, vec<T, N>(lo), vec<T, N>(hi));
}

// Geometric functions (section 6.6 of the specification).
template <typename T, int N>
inline T length(vec<T, N> v) { return T(__builtin_sqrtf(float(dot(v, v)))); }
template <typename T, int N>
inline T length_squared(vec<T, N> v) { return dot(v, v); }
template <typename T, int N>
inline T distance(vec<T, N> a, vec<T, N> b) { return length(a - b); }
template <typename T, int N>
inline vec<T, N> normalize(vec<T, N> v) { return v * vec<T, N>(T(1.0f / __builtin_sqrtf(float(dot(v, v))))); }
inline vec<float, 3> cross(vec<float, 3> a, vec<float, 3> b) {
  return vec<float, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

// fract (x - floor(x), below 1 as Metal keeps it) and step (0 below the edge, else 1).
inline float fract(float x) { return __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f); }
inline half fract(half x) { return half(fract(float(x))); }
template <typename T, int N>
inline vec<T, N> fract(vec<T, N> v) {
  for (int i = 0; i < N; ++i) v.v[i] = fract(v.v[i]);
  return v;
}
template <typename T, MH_IF_SCALAR(T)>
inline T step(T edge, T x) { return x < edge ? T(0) : T(1); }
template <typename T, int N>
inline vec<T, N> step(vec<T, N> edge, vec<T, N> x) {
  for (int i = 0; i < N; ++i) x.v[i] = step(edge.v[i], x.v[i]);
  return x;
}
template <typename T, int N, typename U, MH_IF_SCALAR(U)>
inline vec<T, N> step(U edge, vec<T, N> x) { return step(vec<T, N>(edge), x); }

// Integer bit functions (section 6.4): clz and ctz of 0 are the type's width.
template <typename T>
inline T popcount(T x) {
  static_assert(__is_integral(T), "popcount takes integers");
  return T(__builtin_popcountll((unsigned long long)x & (~0ull >> (64 - 8 * sizeof(T)))));
}
template <typename T>
inline T clz(T x) {
  static_assert(__is_integral(T), "clz takes integers");
  const unsigned long long u = (unsigned long long)x & (~0ull >> (64 - 8 * sizeof(T)));
  return T(u ? __builtin_clzll(u) - (64 - 8 * int(sizeof(T))) : 8 * int(sizeof(T)));
}
template <typename T>
inline T ctz(T x) {
  static_assert(__is_integral(T), "ctz takes integers");
  const unsigned long long u = (unsigned long long)x & (~0ull >> (64 - 8 * sizeof(T)));
  return T(u ? __builtin_ctzll(u) : 8 * int(sizeof(T)));
}
template <typename T>
inline T reverse_bits(T x) {
  T r = 0;
  for (int i = 0; i < 8 * int(sizeof(T)); ++i) r = T(r | (((x >> i) & 1) << (8 * sizeof(T) - 1 - i)));
  return r;
}

// metal::precise:: and metal::fast:: name the same functions here: the CPU
// computes IEEE results either way (no fast-math).
#define MH_USING(name, fn) using metal::name;
namespace precise {
MH_MATH_FUNCTIONS(MH_USING)
using metal::pow;
using metal::powr;
using metal::fmin;
using metal::fmax;
}  // namespace precise
namespace fast {
MH_MATH_FUNCTIONS(MH_USING)
using metal::pow;
using metal::powr;
using metal::fmin;
using metal::fmax;
}  // namespace fast
#undef MH_USING
#undef MH_MATH_FUNCTIONS

// ---- numeric limits ----------------------------------------------------------
template <typename T>
struct numeric_limits {  // integers
  static_assert(__is_integral(T), "metal_compat: numeric_limits of this type is not modelled");
  static constexpr bool is_signed = T(-1) < T(0);
  static constexpr T max() {
    return is_signed ? T((T(1) << (sizeof(T) * 8 - 2)) - 1 + (T(1) << (sizeof(T) * 8 - 2)))
                     : T(~T(0));
  }
  static constexpr T min() { return is_signed ? T(-max() - 1) : T(0); }
  static constexpr T lowest() { return min(); }
};
#define MH_FLOAT_LIMITS(T, MAX, MIN, EPS)                                          \
  template <>                                                                      \
  struct numeric_limits<T> {                                                       \
    static constexpr bool is_signed = true;                                        \
    static constexpr T max() { return T(MAX); }                                    \
    static constexpr T min() { return T(MIN); }                                    \
    static constexpr T lowest() { return T(-(MAX)); }                              \
    static constexpr T epsilon() { return T(EPS); }                                \
    static constexpr T infinity() { return T(__builtin_huge_valf()); }             \
    static constexpr T quiet_NaN() { return T(__builtin_nanf("")); }               \
  };
MH_FLOAT_LIMITS(float, __FLT_MAX__, __FLT_MIN__, __FLT_EPSILON__)
MH_FLOAT_LIMITS(half, 65504.0f, 6.103515625e-05f, 0.0009765625f)
MH_FLOAT_LIMITS(bfloat, 3.38953139e38f, 1.17549435e-38f, 0.0078125f)
#undef MH_FLOAT_LIMITS

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
  static_assert((__is_same(T, float) || __is_same(T, half) || __is_same(T, bfloat)) &&
                    Cols == 8 && Rows == 8,
                "metal_compat: only 8x8 simdgroup matrices of float, half or bfloat are modelled");
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
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <typename T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.elements = vec<T, 2>(value);
  return m;
}

namespace mh_detail {
// What one lane passes to a collective load or store (E: the matrix's element type).
template <typename P, typename E = float>
struct transfer_args {
  P ptr;
  ulong elements_per_row;
  ulong ox, oy;
  bool transpose;
  vec<E, 2>* elements;
};

// The lanes' pointers, strides, origins and transpose flags must agree: the
// hardware operation has one of each.
template <typename P, typename E>
inline void check_uniform(const char* op, unsigned line, void* const* lanes) {
  const transfer_args<P, E>* first = static_cast<const transfer_args<P, E>*>(lanes[0]);
  for (int l = 1; l < 32; ++l) {
    const transfer_args<P, E>* a = static_cast<const transfer_args<P, E>*>(lanes[l]);
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
template <typename P, typename E>
inline ulong element_offset(const transfer_args<P, E>& a, int r, int c) {
  if (a.transpose) return (a.oy + ulong(c)) * a.elements_per_row + a.ox + ulong(r);
  return (a.oy + ulong(r)) * a.elements_per_row + a.ox + ulong(c);
}

template <typename E, typename P>
inline void load(vec<E, 2>& d, P src, ulong epr, vec<ulong, 2> origin, bool transpose,
                 unsigned line) {
  transfer_args<P, E> mine{src, epr, origin.x, origin.y, transpose, &d};
  void* const* lanes = mh_simd_collective("simdgroup_load", line, &mine, 1);
  if (!lanes) return;  // the last lane to arrive has done it for us
  check_uniform<P, E>("simdgroup_load", line, lanes);
  mh_site_push(line, nullptr);
  for (uint32_t l = 0; l < 32; ++l) {
    const transfer_args<P, E>& a = *static_cast<const transfer_args<P, E>*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    const E e0 = E(src[element_offset(a, r, c)]);
    const E e1 = E(src[element_offset(a, r, c + 1)]);
    *a.elements = vec<E, 2>(e0, e1);
  }
  mh_site_pop();
  mh_simd_release();
}

template <typename E, typename P>
inline void store(const vec<E, 2>& s, P dst, ulong epr, vec<ulong, 2> origin,
                  bool transpose, unsigned line) {
  transfer_args<P, E> mine{dst, epr, origin.x, origin.y, transpose,
                           const_cast<vec<E, 2>*>(&s)};
  void* const* lanes = mh_simd_collective("simdgroup_store", line, &mine, 1);
  if (!lanes) return;
  check_uniform<P, E>("simdgroup_store", line, lanes);
  mh_site_push(line, nullptr);
  for (uint32_t l = 0; l < 32; ++l) {
    const transfer_args<P, E>& a = *static_cast<const transfer_args<P, E>*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    dst[element_offset(a, r, c)] = a.elements->x;
    dst[element_offset(a, r, c + 1)] = a.elements->y;
  }
  mh_site_pop();
  mh_simd_release();
}

// One lane's matrices of a multiply: d = a * b + c, each of its own element type
// (Metal's simdgroup_multiply_accumulate takes, say, half a and b into float c
// and d, as a GEMM with half tiles and float32 accumulators does).
template <typename D, typename A, typename B, typename C>
struct mma_args {
  vec<D, 2>* d;
  const vec<A, 2>* a;
  const vec<B, 2>* b;
  const vec<C, 2>* c;  // null for simdgroup_multiply
};

// d = a * b (+ c), with each operand gathered from the 32 lanes that hold it;
// products and sums in float, rounded to d's element type once at the end.
template <typename D, typename A, typename B, typename C>
inline void multiply(const char* op, mma_args<D, A, B, C> mine, unsigned line) {
  using args = mma_args<D, A, B, C>;
  void* const* lanes = mh_simd_collective(op, line, &mine, 1);
  if (!lanes) return;
  float Am[8][8], Bm[8][8], Cm[8][8];
  for (uint32_t l = 0; l < 32; ++l) {
    const args& m = *static_cast<const args*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    for (int e = 0; e < 2; ++e) {
      Am[r][c + e] = float((*m.a)[e]);
      Bm[r][c + e] = float((*m.b)[e]);
      Cm[r][c + e] = m.c ? float((*m.c)[e]) : 0.0f;
    }
  }
  // All inputs are gathered before any output is written: d may alias a, b, c.
  for (uint32_t l = 0; l < 32; ++l) {
    const args& m = *static_cast<const args*>(lanes[l]);
    int r, c;
    lane_coord(l, r, c);
    for (int e = 0; e < 2; ++e) {
      float sum = Cm[r][c + e];
      for (int k = 0; k < 8; ++k) sum = __builtin_fmaf(Am[r][k], Bm[k][c + e], sum);
      (*m.d)[e] = D(sum);
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

template <typename D, typename A, typename B, typename C>
inline void simdgroup_multiply_accumulate(thread simdgroup_matrix<D, 8, 8>& d,
                                          const thread simdgroup_matrix<A, 8, 8>& a,
                                          const thread simdgroup_matrix<B, 8, 8>& b,
                                          const thread simdgroup_matrix<C, 8, 8>& c,
                                          unsigned line = __builtin_LINE()) {
  mh_detail::multiply<D, A, B, C>("simdgroup_multiply_accumulate",
                                  {&d.elements, &a.elements, &b.elements, &c.elements}, line);
}
template <typename D, typename A, typename B>
inline void simdgroup_multiply(thread simdgroup_matrix<D, 8, 8>& d,
                               const thread simdgroup_matrix<A, 8, 8>& a,
                               const thread simdgroup_matrix<B, 8, 8>& b,
                               unsigned line = __builtin_LINE()) {
  mh_detail::multiply<D, A, B, D>("simdgroup_multiply",
                                  {&d.elements, &a.elements, &b.elements, nullptr}, line);
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
MH_VECTOR_NAMES(half, half)
MH_VECTOR_NAMES(bfloat, bfloat)
#undef MH_VECTOR_NAMES

// Metal's half literals, 1.0h and 2h (C++ reserves suffixes without an
// underscore for the standard: the warning is off for this one).
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wuser-defined-literals"
constexpr half operator""h(long double v) { return half(v); }
constexpr half operator""h(unsigned long long v) { return half(v); }
#pragma clang diagnostic pop

// ---- constants -----------------------------------------------------------------
#define INFINITY __builtin_huge_valf()
#define HUGE_VALF __builtin_huge_valf()
#define NAN __builtin_nanf("")
#define MAXFLOAT __FLT_MAX__
#define FLT_MAX __FLT_MAX__
#define FLT_MIN __FLT_MIN__
#define FLT_EPSILON __FLT_EPSILON__
#define M_PI_F 3.14159265358979323846f
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LN2_F 0.693147180559945309417f
#define M_SQRT2_F 1.41421356237309504880f

// ---- threadgroup variables ---------------------------------------------------
// translation.py rewrites `threadgroup T name[dims];` into
//   threadgroup T (&name)[dims] = metal_harness::threadgroup_var<T[dims], ID>("name");
// C++ has no storage shared by a group of threads: this hands every thread of
// the running threadgroup the same guarded, poisoned block.
namespace metal_harness {
template <typename T, int ID>
inline threadgroup T& threadgroup_var(const char* name, unsigned line = __builtin_LINE()) {
  static mh_tg_slot slot;
  return *(threadgroup T*)mh_threadgroup_alloc(&slot, sizeof(T), line, name);
}

inline uint3 attr3(const uint32_t (&v)[3]) { return uint3(v[0], v[1], v[2]); }
}  // namespace metal_harness

// ---- simdgroup_async_copy ---------------------------------------------------------
// Not declared here: as on Apple's compiler, a kernel declares the AIR
// intrinsics itself, at namespace scope (kernels/metal/sgemm/async_copy.h). async_copy.cpp defines them
// under the same __asm symbol names in its own translation unit, so the
// kernel's declarations bind to them at link time.

#include "metal_simd.h"
#include "metal_atomic.h"

using namespace metal;

#include "mlx_utils.h"

#endif  // METAL_HARNESS_COMPAT_H
