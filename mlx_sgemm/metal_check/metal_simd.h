// SIMD-group functions (section 6.9.2 of the Metal Shading Language
// specification) for the Metal CPU harness: reductions, prefix sums,
// broadcasts, shuffles and ballots over the 32 lanes of a simdgroup, and the
// quad-group functions over its groups of 4 lanes.
//
// Each is one collective operation of the simdgroup (mh_simd_collective): the
// lanes that have not returned from the kernel must all call the same
// function at the same line (a lane at another one is reported as divergence,
// a stricter rule than the hardware's, which runs whichever lanes are
// active). Lanes that returned, or wait at a barrier the others reach after
// the call, take no part, as inactive lanes on an Apple GPU, and synccheck
// reports the call (inactive_lanes). A shuffle from an inactive lane is
// reported too (inactive_lane_read) and gets the caller's own value (Metal
// leaves it undefined).
#ifndef METAL_HARNESS_SIMD_H
#define METAL_HARNESS_SIMD_H

namespace metal {
namespace mh_detail {

template <typename T>
struct simd_args {
  T in;
  T out;
  uint32_t param;  // a lane, a delta or a mask
};

template <typename T>
inline const simd_args<T>* lane_args(void* const* lanes, int l) {
  return static_cast<const simd_args<T>*>(lanes[l]);
}

// One collective: `per_lane(lanes, l)` computes lane l's result from every
// lane's arguments (null for lanes taking no part).
template <typename T, typename F>
inline T simd_collective(const char* op, T x, uint32_t param, unsigned line, F per_lane) {
  simd_args<T> mine{x, x, param};
  void* const* lanes = mh_simd_collective(op, line, &mine, 0);
  if (lanes) {
    T results[32];
    for (int l = 0; l < 32; ++l)
      if (lanes[l]) results[l] = per_lane(lanes, l);
    for (int l = 0; l < 32; ++l)
      if (lanes[l]) static_cast<simd_args<T>*>(lanes[l])->out = results[l];
    mh_simd_release();
  }
  return mine.out;
}

// The combination of the values of the lanes taking part, from lane 0 up to
// lane `last` (left out when `exclusive`: an exclusive prefix).
template <typename T, typename C>
inline T fold(void* const* lanes, int last, bool exclusive, T identity, C combine) {
  T acc = identity;
  for (int l = 0; l <= last; ++l) {
    if (!lanes[l] || (exclusive && l == last)) continue;
    acc = combine(acc, lane_args<T>(lanes, l)->in);
  }
  return acc;
}

template <typename T>
inline T first_value(void* const* lanes) {
  for (int l = 0; l < 32; ++l)
    if (lanes[l]) return lane_args<T>(lanes, l)->in;
  return T();
}

template <typename T, typename C>
inline T reduce(const char* op, T x, unsigned line, C combine) {
  return simd_collective(op, x, 0, line, [&](void* const* lanes, int) {
    // Start from the first taking-part lane: max, min and the bitwise
    // operations have no identity that suits every type.
    T acc = first_value<T>(lanes);
    bool first = true;
    for (int l = 0; l < 32; ++l) {
      if (!lanes[l]) continue;
      if (!first) acc = combine(acc, lane_args<T>(lanes, l)->in);
      first = false;
    }
    return acc;
  });
}

// The value of `source`, or the caller's own when that lane takes no part:
// a lane past the simdgroup's end (which does not exist), or an inactive one
// (it exists but did not call the shuffle: it returned or went elsewhere),
// whose value Metal leaves undefined: synccheck reports reading it.
template <typename T>
inline T read_lane(void* const* lanes, int self, long source, const char* op, unsigned line) {
  if (source < 0 || source >= 32) return lane_args<T>(lanes, self)->in;
  if (!lanes[source]) {
    if (source < long(mh_simd_lane_count()))
      mh_report("inactive_lane_read", line,
                "%s: lane %d of simdgroup %u reads lane %ld, which is inactive (it did not call "
                "%s: it returned or went elsewhere); Metal leaves the value undefined",
                op, self, mh_simdgroup_index(), source, op);
    return lane_args<T>(lanes, self)->in;
  }
  return lane_args<T>(lanes, int(source))->in;
}

struct plus {
  template <typename T>
  T operator()(T a, T b) const { return a + b; }
};
struct times {
  template <typename T>
  T operator()(T a, T b) const { return a * b; }
};

}  // namespace mh_detail

template <typename T>
inline T simd_sum(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_sum", x, line, mh_detail::plus());
}
template <typename T>
inline T simd_product(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_product", x, line, mh_detail::times());
}
template <typename T>
inline T simd_max(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_max", x, line, [](T a, T b) { return max(a, b); });
}
template <typename T>
inline T simd_min(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_min", x, line, [](T a, T b) { return min(a, b); });
}
template <typename T>
inline T simd_and(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_and", x, line, [](T a, T b) { return T(a & b); });
}
template <typename T>
inline T simd_or(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_or", x, line, [](T a, T b) { return T(a | b); });
}
template <typename T>
inline T simd_xor(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_xor", x, line, [](T a, T b) { return T(a ^ b); });
}
inline bool simd_all(bool x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_all", x, line, [](bool a, bool b) { return a && b; });
}
inline bool simd_any(bool x, unsigned line = __builtin_LINE()) {
  return mh_detail::reduce("simd_any", x, line, [](bool a, bool b) { return a || b; });
}

#define MH_SIMD_PREFIX(name, op, identity, exclusive)                                  \
  template <typename T>                                                                \
  inline T name(T x, unsigned line = __builtin_LINE()) {                               \
    return mh_detail::simd_collective(#name, x, 0, line, [](void* const* lanes, int l) { \
      return mh_detail::fold<T>(lanes, l, exclusive, T(identity), mh_detail::op());    \
    });                                                                                \
  }
MH_SIMD_PREFIX(simd_prefix_inclusive_sum, plus, 0, false)
MH_SIMD_PREFIX(simd_prefix_exclusive_sum, plus, 0, true)
MH_SIMD_PREFIX(simd_prefix_inclusive_product, times, 1, false)
MH_SIMD_PREFIX(simd_prefix_exclusive_product, times, 1, true)
#undef MH_SIMD_PREFIX

// Shuffles: which lane each lane reads, from its own index l and the caller's
// parameter q (a lane, a delta or a mask; every lane passes its own); base is
// the first lane of l's quad (quad-group shuffles, below).
#define MH_SIMD_SHUFFLE(name, source)                                                  \
  template <typename T>                                                                \
  inline T name(T x, ushort p, unsigned line = __builtin_LINE()) {                     \
    return mh_detail::simd_collective(#name, x, p, line, [&](void* const* lanes, int l) { \
      const long q = long(mh_detail::lane_args<T>(lanes, l)->param);                    \
      const int base = l & ~3;                                                         \
      (void)q;                                                                         \
      (void)base;                                                                      \
      return mh_detail::read_lane<T>(lanes, l, source, #name, line);                   \
    });                                                                                \
  }
MH_SIMD_SHUFFLE(simd_shuffle, q)
MH_SIMD_SHUFFLE(simd_broadcast, q)
// Down: lanes past the end keep their own value; up: lanes before the start.
MH_SIMD_SHUFFLE(simd_shuffle_down, l + q < 32 ? l + q : l)
MH_SIMD_SHUFFLE(simd_shuffle_up, l - q >= 0 ? l - q : l)
MH_SIMD_SHUFFLE(simd_shuffle_xor, l ^ q)
MH_SIMD_SHUFFLE(simd_shuffle_rotate_down, (l + q) % 32)
MH_SIMD_SHUFFLE(simd_shuffle_rotate_up, ((l - q) % 32 + 32) % 32)

// Quad-group functions (section 6.9.3): the same over groups of 4 lanes
// (lanes 4q .. 4q + 3), each one collective of the whole simdgroup here.
namespace mh_detail {
template <typename T, typename C>
inline T quad_reduce(void* const* lanes, int l, C combine) {
  const int base = l & ~3;
  T acc = lane_args<T>(lanes, l)->in;
  for (int q = base; q < base + 4; ++q)
    if (q != l && lanes[q]) acc = combine(acc, lane_args<T>(lanes, q)->in);
  return acc;
}
}  // namespace mh_detail
#define MH_QUAD_REDUCE(name, combine)                                                    \
  template <typename T>                                                                  \
  inline T name(T x, unsigned line = __builtin_LINE()) {                                 \
    return mh_detail::simd_collective(#name, x, 0, line, [](void* const* lanes, int l) {  \
      return mh_detail::quad_reduce<T>(lanes, l, combine);                               \
    });                                                                                  \
  }
MH_QUAD_REDUCE(quad_sum, mh_detail::plus())
MH_QUAD_REDUCE(quad_product, mh_detail::times())
MH_QUAD_REDUCE(quad_max, [](T a, T b) { return max(a, b); })
MH_QUAD_REDUCE(quad_min, [](T a, T b) { return min(a, b); })
#undef MH_QUAD_REDUCE
// Which lane of its quad each lane reads.
MH_SIMD_SHUFFLE(quad_shuffle, base + q % 4)
MH_SIMD_SHUFFLE(quad_broadcast, base + q % 4)
MH_SIMD_SHUFFLE(quad_shuffle_xor, base + ((l - base) ^ q) % 4)
MH_SIMD_SHUFFLE(quad_shuffle_down, l - base + q < 4 ? l + q : l)
MH_SIMD_SHUFFLE(quad_shuffle_up, l - base - q >= 0 ? l - q : l)
#undef MH_SIMD_SHUFFLE

// simd_ballot: a bit per lane whose predicate is true (lanes taking no part: 0).
struct simd_vote {
  using vote_t = uint64_t;
  vote_t bits;
  vote_t active;  // the lanes that took part: what all() looks at
  explicit constexpr simd_vote(vote_t v = 0, vote_t a = ~vote_t(0)) : bits(v), active(a) {}
  explicit constexpr operator vote_t() const { return bits; }
  bool all() const { return (bits & active) == active; }
  bool any() const { return bits != 0; }
};

inline simd_vote simd_ballot(bool pred, unsigned line = __builtin_LINE()) {
  const uint64_t mine = pred;
  const uint64_t bits = mh_detail::simd_collective("simd_ballot", mine, 0, line,
                                                   [](void* const* lanes, int) {
    uint64_t v = 0;
    for (int l = 0; l < 32; ++l)
      if (lanes[l] && mh_detail::lane_args<uint64_t>(lanes, l)->in) v |= uint64_t(1) << l;
    return v;
  });
  const uint64_t active = mh_detail::simd_collective("simd_active_threads_mask", uint64_t(0), 0,
                                                     line, [](void* const* lanes, int) {
    uint64_t v = 0;
    for (int l = 0; l < 32; ++l)
      if (lanes[l]) v |= uint64_t(1) << l;
    return v;
  });
  return simd_vote(bits, active);
}

template <typename T>
inline T simd_broadcast_first(T x, unsigned line = __builtin_LINE()) {
  return mh_detail::simd_collective("simd_broadcast_first", x, 0, line,
                                    [](void* const* lanes, int) {
                                      return mh_detail::first_value<T>(lanes);
                                    });
}

inline bool simd_is_first(unsigned line = __builtin_LINE()) {
  const uint32_t lane = mh_lane();
  return mh_detail::simd_collective("simd_is_first", lane, 0, line,
                                    [](void* const* lanes, int l) {
                                      return uint32_t(mh_detail::first_value<uint32_t>(lanes) ==
                                                      uint32_t(l));
                                    }) != 0;
}

}  // namespace metal

#endif  // METAL_HARNESS_SIMD_H
