// Atomics (section 6.15 of the Metal Shading Language specification) for the
// Metal CPU harness: atomic<T> in device or threadgroup memory, and the
// *_explicit functions MLX's custom kernels call (atomic_outputs=True makes
// every output a `device atomic<T>*`).
//
// The threads of a dispatch run one at a time (fibers), so each operation is
// indivisible as it is. Each is checked as one access (mh_access): in bounds,
// reading initialized memory, and never a race with another atomic operation
// (its own loads and stores are left out of the instrumentation).
#ifndef METAL_HARNESS_ATOMIC_H
#define METAL_HARNESS_ATOMIC_H

namespace metal {

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

enum class thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };

template <typename T>
struct atomic {
  T mh_value;  // the layout of T, as Metal's atomic<T>
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;

// Ordering is a no-op here: one thread runs at a time.
inline void atomic_thread_fence(mem_flags, memory_order, thread_scope = thread_scope::thread_scope_device) {}

namespace mh_detail {

// new_value(old) stored, the old value returned; `flags` say how it reads and writes.
template <typename T, typename P, typename F>
inline T atomic_update(P object, int flags, unsigned line, F new_value) {
  mh_access((const void*)object, sizeof(T), flags | MH_ATOMIC, line);
  mh_untraced_begin();
  T* p = (T*)object;
  const T old = *p;
  if (flags & MH_WRITE) *p = new_value(old);
  mh_untraced_end();
  return old;
}

}  // namespace mh_detail

// One set of functions per address space an atomic may live in.
#define MH_ATOMIC_FUNCTIONS(SPACE)                                                          \
  template <typename T, typename U>                                                         \
  inline void atomic_store_explicit(volatile SPACE atomic<T>* object, U desired, memory_order, \
                                    unsigned line = __builtin_LINE()) {                     \
    mh_detail::atomic_update<T>(object, MH_WRITE, line, [&](T) { return T(desired); });      \
  }                                                                                         \
  template <typename T>                                                                     \
  inline T atomic_load_explicit(volatile SPACE atomic<T>* object, memory_order,              \
                                unsigned line = __builtin_LINE()) {                         \
    return mh_detail::atomic_update<T>(object, MH_READ, line, [](T old) { return old; });    \
  }                                                                                         \
  template <typename T, typename U>                                                         \
  inline T atomic_exchange_explicit(volatile SPACE atomic<T>* object, U desired, memory_order, \
                                    unsigned line = __builtin_LINE()) {                     \
    return mh_detail::atomic_update<T>(object, MH_READ | MH_WRITE, line,                    \
                                       [&](T) { return T(desired); });                      \
  }                                                                                         \
  template <typename T, typename U>                                                         \
  inline bool atomic_compare_exchange_weak_explicit(                                        \
      volatile SPACE atomic<T>* object, thread T* expected, U desired, memory_order,        \
      memory_order, unsigned line = __builtin_LINE()) {                                     \
    bool swapped = false;                                                                   \
    const T want = *expected;                                                               \
    const T old = mh_detail::atomic_update<T>(object, MH_READ | MH_WRITE, line, [&](T o) {  \
      swapped = o == want;                                                                  \
      return swapped ? T(desired) : o;                                                      \
    });                                                                                     \
    if (!swapped) *expected = old;                                                          \
    return swapped;                                                                         \
  }                                                                                         \
  MH_ATOMIC_RMW(SPACE, add, T(old + operand))                                               \
  MH_ATOMIC_RMW(SPACE, sub, T(old - operand))                                               \
  MH_ATOMIC_RMW(SPACE, and, T(old & operand))                                               \
  MH_ATOMIC_RMW(SPACE, or, T(old | operand))                                                \
  MH_ATOMIC_RMW(SPACE, xor, T(old ^ operand))                                               \
  MH_ATOMIC_RMW(SPACE, min, min(old, T(operand)))                                           \
  MH_ATOMIC_RMW(SPACE, max, max(old, T(operand)))

#define MH_ATOMIC_RMW(SPACE, name, expression)                                              \
  template <typename T, typename U>                                                         \
  inline T atomic_fetch_##name##_explicit(volatile SPACE atomic<T>* object, U operand,     \
                                          memory_order, unsigned line = __builtin_LINE()) { \
    return mh_detail::atomic_update<T>(object, MH_READ | MH_WRITE, line,                    \
                                       [&](T old) { return expression; });                  \
  }

MH_ATOMIC_FUNCTIONS(device)
MH_ATOMIC_FUNCTIONS(threadgroup)
#undef MH_ATOMIC_RMW
#undef MH_ATOMIC_FUNCTIONS

}  // namespace metal

#endif  // METAL_HARNESS_ATOMIC_H
