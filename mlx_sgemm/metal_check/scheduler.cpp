// Threads as fibers: one Metal dispatch, threadgroup by threadgroup, with
// barriers and simdgroup collectives (and synccheck).
//
// Semantics modelled:
//   * dispatchThreads: threadgroups of the given size tile the grid; the last
//     one along an axis is partial. Threadgroups run one after another, in a
//     seeded random order (a kernel must not depend on any order).
//   * Threads of a threadgroup are fibers. Each runs until it blocks (at a
//     barrier or a simdgroup function) or returns; then another runnable one
//     runs, in a seeded random order (see run_threadgroup). A thread that reads
//     threadgroup memory another thread writes before the barrier that should
//     separate them reads stale or poisoned data (and racecheck reports it
//     whatever the order).
//   * Simdgroups are 32 consecutive threads (by thread_index_in_threadgroup).
//   * synccheck: threads waiting at different barriers, a simdgroup function
//     that not all lanes reach (deadlock, divergence: the run ends), and a
//     barrier reached after some threads of the threadgroup have returned
//     (Metal requires every thread to reach it; Apple GPUs let the others go
//     on, and so does this, after reporting it).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime_internal.h"

namespace mh {

Fiber* g_current = nullptr;
Fiber* g_fibers = nullptr;
int g_fiber_capacity = 0;
int g_threads = 0;
const char* g_phase = "setup";
uint64_t g_async_copies = 0;
uint64_t g_generation = 0;
uint64_t g_interval = 0;
uint32_t g_barriers_passed = 0;
unsigned g_interval_start_line = 0;
unsigned g_last_barrier_line = 0;

namespace {

constexpr unsigned kMemThreadgroup = 2;  // metal::mem_flags::mem_threadgroup

struct Collective {  // one simdgroup's collective operation in progress
  const char* op = nullptr;
  unsigned line = 0;
  int arrived = 0;
  int all_lanes = 0;
  void* args[kSimdWidth];
  int first_lane = -1;
  int performer = 0;  // lane + 1 of the lane woken to perform it; 0: none
};

struct Scratch {  // per-simdgroup scratch (async copy events)
  char bytes[4096];
  size_t used = 0;
};

void* const* g_buffers = nullptr;
Collective* g_collectives = nullptr;
Scratch* g_scratch = nullptr;
int g_simdgroups = 0;
int* g_order = nullptr;
Context g_scheduler;
size_t g_threadgroup_bytes = 0;
uint64_t g_rng = 0;

uint64_t next_random() {  // xorshift64*
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 2685821657736338717ULL;
}

template <typename T>
void shuffle(T* items, uint64_t n) {  // Fisher-Yates
  for (uint64_t i = n; i > 1; --i) {
    const uint64_t j = next_random() % i;
    const T tmp = items[i - 1];
    items[i - 1] = items[j];
    items[j] = tmp;
  }
}

Site at_line(unsigned line) { return Site{0, line}; }

void yield_to_scheduler() { switch_context(g_current->context, g_scheduler); }

Collective& collective_of(const Fiber& f) {
  return g_collectives[f.attrs.simdgroup_index_in_threadgroup];
}

// Lanes of simdgroup `s` that exist, and those that have not returned.
void lanes_of(int s, int* exist, int* live) {
  *exist = *live = 0;
  for (int t = s * kSimdWidth; t < (s + 1) * kSimdWidth && t < g_threads; ++t) {
    ++*exist;
    if (g_fibers[t].state != FINISHED) ++*live;
  }
}

// "lanes 3, 16-31": the lanes of simdgroup `s` for which `pick(fiber)` holds.
template <typename F>
void describe_lanes(int s, F pick, char* out, size_t n) {
  size_t used = 0;
  out[0] = 0;
  int first = -1;
  const int end = s * kSimdWidth + kSimdWidth < g_threads ? s * kSimdWidth + kSimdWidth : g_threads;
  for (int t = s * kSimdWidth; t <= end; ++t) {
    const bool in = t < end && pick(g_fibers[t]);
    if (in && first < 0) first = t;
    if (!in && first >= 0 && used + 16 < n) {
      const int a = first - s * kSimdWidth, b = t - 1 - s * kSimdWidth;
      used += size_t(snprintf(out + used, n - used, a == b ? "%s%d" : "%s%d-%d",
                              used ? ", " : "", a, b));
      first = -1;
    }
  }
}

// synccheck: a simdgroup function performed while lanes of the simdgroup that
// exist are not in it (they returned, or wait elsewhere): on an Apple GPU the
// inactive lanes take no part, which a kernel rarely means. Reported, and the
// operation goes on with the lanes that called it, as the hardware's does.
void report_inactive_lanes(const Collective& c, int s) {
  int exist, live;
  lanes_of(s, &exist, &live);
  if (c.arrived >= exist) return;
  char returned[128], waiting[128];
  describe_lanes(s, [](const Fiber& f) { return f.state == FINISHED; }, returned, sizeof returned);
  describe_lanes(s, [](const Fiber& f) { return f.state == AT_BARRIER; }, waiting, sizeof waiting);
  unsigned barrier = 0;
  for (int t = s * kSimdWidth; t < s * kSimdWidth + exist; ++t)
    if (g_fibers[t].state == AT_BARRIER) barrier = g_fibers[t].barrier_line;
  char what[320];
  snprintf(what, sizeof what, "%s%s%s%s%s%s", returned[0] ? "lanes " : "", returned,
           returned[0] ? " had returned from the kernel" : "", returned[0] && waiting[0] ? "; " : "",
           waiting[0] ? "lanes " : "", waiting);
  char at[64] = "";
  if (waiting[0]) snprintf(at, sizeof at, " wait at the threadgroup_barrier at @line:%u@", barrier);
  const uint32_t* tg = g_fibers[s * kSimdWidth].attrs.threadgroup_position_in_grid;
  add_finding("synccheck", "inactive_lanes", at_line(c.line), Site{0, 0}, s,
              "%s called by %d of the %d lanes of simdgroup %d (threadgroup (%u, %u, %u)): %s%s. "
              "On an Apple GPU inactive lanes take no part: the result covers the %d active "
              "lanes only",
              c.op, c.arrived, exist, s, tg[0], tg[1], tg[2], what, at, c.arrived);
}

void fiber_main() {
  mh_launch(g_buffers, &g_current->attrs);
  Fiber* me = g_current;
  me->state = FINISHED;
  // A simdgroup function waiting for this lane can never complete; one that
  // does not need every lane (simd_sum, simdgroup_barrier) no longer waits.
  Collective& c = collective_of(*me);
  if (c.arrived > 0) {
    if (c.all_lanes)
      fatal("divergence", at_line(c.line),
            "a lane returned from the kernel while its simdgroup waits in %s; all 32 lanes "
            "must call it",
            c.op);
    const int s = int(me->attrs.simdgroup_index_in_threadgroup);
    int exist, live;
    lanes_of(s, &exist, &live);
    if (c.arrived == live) {
      // Every live lane has arrived: one of them, woken alone, performs the
      // operation for the lanes that arrived (mh_simd_collective) and then
      // releases the others.
      for (int t = s * kSimdWidth; t < s * kSimdWidth + exist; ++t) {
        if (g_fibers[t].state == IN_COLLECTIVE) {
          c.performer = t - s * kSimdWidth + 1;
          g_fibers[t].state = RUNNABLE;
          break;
        }
      }
    }
  }
  switch_context(me->context, g_scheduler);  // never resumed: the fiber is started anew
}

void init_fiber(Fiber& f) {
  const size_t page = page_size();
  if (!f.stack_map) {
    void* map = mmap(nullptr, kStackSize + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) internal_error("mmap failed for a thread's stack");
    f.stack_map = static_cast<char*>(map);
    mprotect(f.stack_map, page, PROT_NONE);
  }
  start_context(f.context, f.stack_map + page, kStackSize, fiber_main);
  f.state = RUNNABLE;
  f.steps = 0;
}

void set_attrs(const Dispatch& d, const uint32_t tg[3], const uint32_t size[3], int index,
               mh_attrs& a) {
  const uint32_t local[3] = {uint32_t(index) % size[0], uint32_t(index) / size[0] % size[1],
                             uint32_t(index) / (size[0] * size[1])};
  const uint32_t threads = size[0] * size[1] * size[2];
  const uint32_t nominal = d.group[0] * d.group[1] * d.group[2];
  for (int i = 0; i < 3; ++i) {
    a.thread_position_in_threadgroup[i] = local[i];
    a.threadgroup_position_in_grid[i] = tg[i];
    a.thread_position_in_grid[i] = tg[i] * d.group[i] + local[i];
    a.threadgroups_per_grid[i] = d.groups[i];
    a.threads_per_grid[i] = d.grid[i];
    a.grid_size[i] = d.grid[i];
    a.grid_origin[i] = 0;
    a.threads_per_threadgroup[i] = size[i];
    a.dispatch_threads_per_threadgroup[i] = d.group[i];
  }
  a.thread_index_in_threadgroup = uint32_t(index);
  a.simdgroup_index_in_threadgroup = uint32_t(index) / kSimdWidth;
  a.thread_index_in_simdgroup = uint32_t(index) % kSimdWidth;
  a.simdgroups_per_threadgroup = (threads + kSimdWidth - 1) / kSimdWidth;
  a.dispatch_simdgroups_per_threadgroup = (nominal + kSimdWidth - 1) / kSimdWidth;
  a.threads_per_simdgroup = kSimdWidth;
  a.thread_execution_width = kSimdWidth;
  a.quadgroup_index_in_threadgroup = uint32_t(index) / 4;
  a.thread_index_in_quadgroup = uint32_t(index) % 4;
  a.quadgroups_per_threadgroup = (threads + 3) / 4;
  a.dispatch_quadgroups_per_threadgroup = (nominal + 3) / 4;
}

void run_fiber(Fiber& f) {
  g_current = &f;
  switch_context(g_scheduler, f.context);
  g_current = nullptr;
}

[[noreturn]] void report_stuck_threads() {
  // Nobody can run and not everyone is at a threadgroup barrier.
  char detail[768];
  size_t used = 0;
  unsigned line = 0;
  for (int t = 0; t < g_threads && used + 96 < sizeof detail; ++t) {
    const Fiber& f = g_fibers[t];
    if (f.state == AT_BARRIER) {
      used += size_t(snprintf(detail + used, sizeof detail - used,
                              "thread %d at the threadgroup_barrier at @line:%u@; ", t, f.barrier_line));
      if (!line) line = f.barrier_line;
    } else if (f.state == IN_COLLECTIVE) {
      used += size_t(snprintf(detail + used, sizeof detail - used, "thread %d in %s at @line:%u@; ",
                              t, collective_of(f).op, collective_of(f).line));
      line = collective_of(f).line;
    }
  }
  g_current = nullptr;
  fatal("deadlock", at_line(line), "threads wait for each other at different places: %s", detail);
}

// Everyone who has not returned waits at one barrier (at `line`): release it.
void release_barrier(int waiting, int finished, unsigned line) {
  unsigned flags = ~0u;
  for (int t = 0; t < g_threads; ++t)
    if (g_fibers[t].state == AT_BARRIER) flags &= g_fibers[t].barrier_flags;
  if (finished > 0)
    add_finding("synccheck", "barrier_after_return", at_line(line), Site{0, 0}, 0,
                "threadgroup_barrier reached by %d of the threadgroup's %d threads: the other %d "
                "had returned from the kernel (Metal requires every thread of the threadgroup "
                "to reach each barrier)",
                waiting, g_threads, finished);
  ++g_barriers_passed;
  g_last_barrier_line = line;
  if (flags & kMemThreadgroup) {
    ++g_interval;
    g_interval_start_line = line;
  }
  for (int t = 0; t < g_threads; ++t)
    if (g_fibers[t].state == AT_BARRIER) g_fibers[t].state = RUNNABLE;
}

void run_threadgroup(const Dispatch& d, const uint32_t tg[3]) {
  uint32_t size[3];
  for (int i = 0; i < 3; ++i) {
    const uint32_t start = tg[i] * d.group[i];
    size[i] = d.grid[i] - start < d.group[i] ? d.grid[i] - start : d.group[i];
  }
  g_threads = int(size[0] * size[1] * size[2]);
  g_simdgroups = (g_threads + kSimdWidth - 1) / kSimdWidth;
  ++g_generation;
  ++g_interval;
  g_interval_start_line = 0;
  g_threadgroup_bytes = 0;
  for (int s = 0; s < g_simdgroups; ++s) {
    memset(&g_collectives[s], 0, sizeof(Collective));
    g_scratch[s].used = 0;
  }
  for (int t = 0; t < g_threads; ++t) {
    init_fiber(g_fibers[t]);
    set_attrs(d, tg, size, t, g_fibers[t].attrs);
  }
  int* order = g_order;
  // Between two threadgroup barriers (a "phase") threads are scheduled in one
  // of two ways, picked at random per phase:
  //  * interleaved: in passes, each runnable thread (shuffled) runs until it
  //    blocks; simdgroups advance roughly in step;
  //  * run-ahead: simdgroups and lanes get random priorities, and the first
  //    runnable thread in that order always runs: one simdgroup goes as far as
  //    it can (to a barrier) before the next starts, so a simdgroup that
  //    overwrites a tile before the others have read it does so.
  bool ahead = false;
  auto new_phase = [&]() {
    ahead = (next_random() & 1) != 0;
    if (!ahead) return;
    int sg_order[kMaxThreads / kSimdWidth];
    for (int s = 0; s < g_simdgroups; ++s) sg_order[s] = s;
    shuffle(sg_order, g_simdgroups);
    int n = 0;
    for (int i = 0; i < g_simdgroups; ++i) {
      const int first = sg_order[i] * kSimdWidth;
      const int lanes = g_threads - first < kSimdWidth ? g_threads - first : kSimdWidth;
      for (int l = 0; l < lanes; ++l) order[n + l] = first + l;
      shuffle(order + n, lanes);
      n += lanes;
    }
  };
  new_phase();
  for (;;) {
    if (ahead) {
      Fiber* next = nullptr;
      for (int i = 0; i < g_threads && !next; ++i)
        if (g_fibers[order[i]].state == RUNNABLE) next = &g_fibers[order[i]];
      if (next) {
        run_fiber(*next);
        continue;
      }
    } else {
      int n = 0;
      for (int t = 0; t < g_threads; ++t)
        if (g_fibers[t].state == RUNNABLE) order[n++] = t;
      if (n > 0) {
        shuffle(order, n);
        for (int i = 0; i < n; ++i)
          if (g_fibers[order[i]].state == RUNNABLE) run_fiber(g_fibers[order[i]]);
        continue;
      }
    }
    // Nobody can run. A simdgroup function waiting for lanes that are at a
    // barrier (they skipped it): performed by the lanes that called it
    // (mh_simd_collective reports the inactive ones), as the hardware does.
    bool woke = false;
    for (int sg = 0; sg < g_simdgroups && !woke; ++sg) {
      Collective& c = g_collectives[sg];
      if (c.arrived == 0 || c.all_lanes || c.performer) continue;
      for (int t = sg * kSimdWidth; t < (sg + 1) * kSimdWidth && t < g_threads; ++t) {
        if (g_fibers[t].state == IN_COLLECTIVE) {
          c.performer = t - sg * kSimdWidth + 1;
          g_fibers[t].state = RUNNABLE;
          woke = true;
          break;
        }
      }
    }
    if (woke) continue;
    // Everyone has returned, or waits at a barrier.
    int waiting = 0, finished = 0;
    unsigned line = 0;
    for (int t = 0; t < g_threads; ++t) {
      const Fiber& f = g_fibers[t];
      if (f.state == FINISHED) {
        ++finished;
      } else if (f.state == AT_BARRIER) {
        if (waiting > 0 && f.barrier_line != line) {
          g_current = nullptr;
          fatal("divergence", at_line(f.barrier_line),
                "threads of one threadgroup wait at different threadgroup_barriers (at @line:%u@ "
                "and @line:%u@); all must reach the same one",
                line, f.barrier_line);
        }
        line = f.barrier_line;
        ++waiting;
      }
    }
    if (finished == g_threads) break;
    if (waiting + finished != g_threads) report_stuck_threads();
    release_barrier(waiting, finished, line);
    new_phase();
  }
  // Out-of-bounds writes into the slack around threadgroup variables that no
  // instrumented store made.
  for (int r = 0; r < region_count(); ++r)
    if (region(r)->kind == THREADGROUP) check_canary(*region(r));
}

}  // namespace

void describe_thread(const Fiber& f, char* out, size_t n) {
  const mh_attrs& a = f.attrs;
  snprintf(out, n, "threadgroup (%u, %u, %u), thread (%u, %u, %u) (simdgroup %u, lane %u)",
           a.threadgroup_position_in_grid[0], a.threadgroup_position_in_grid[1],
           a.threadgroup_position_in_grid[2], a.thread_position_in_threadgroup[0],
           a.thread_position_in_threadgroup[1], a.thread_position_in_threadgroup[2],
           a.simdgroup_index_in_threadgroup, a.thread_index_in_simdgroup);
}

void describe_current(char* out, size_t n) {
  if (g_current)
    describe_thread(*g_current, out, n);
  else
    snprintf(out, n, "during %s", g_phase);
}

void start_dispatch(const Dispatch& d, void* const* buffers, uint64_t seed) {
  g_rng = seed * 0x9E3779B97F4A7C15ULL + 1;
  g_buffers = buffers;
  const uint32_t threads = d.group[0] * d.group[1] * d.group[2];
  g_fiber_capacity = int(threads);
  // calloc, not new: the runner links without a C++ runtime library.
  const uint32_t simdgroups = (threads + kSimdWidth - 1) / kSimdWidth;
  g_fibers = static_cast<Fiber*>(calloc(threads, sizeof(Fiber)));
  g_collectives = static_cast<Collective*>(calloc(simdgroups, sizeof(Collective)));
  g_scratch = static_cast<Scratch*>(calloc(simdgroups, sizeof(Scratch)));
  g_order = static_cast<int*>(calloc(threads, sizeof(int)));
  if (!g_fibers || !g_collectives || !g_scratch || !g_order) internal_error("out of memory");
}

void run_dispatch(const Dispatch& d) {
  const uint64_t total = uint64_t(d.groups[0]) * d.groups[1] * d.groups[2];
  uint64_t* groups = static_cast<uint64_t*>(calloc(total, sizeof(uint64_t)));
  if (!groups) internal_error("out of memory");
  for (uint64_t i = 0; i < total; ++i) groups[i] = i;
  shuffle(groups, total);
  g_phase = "the dispatch";
  for (uint64_t i = 0; i < total; ++i) {
    const uint64_t g = groups[i];
    const uint32_t tg[3] = {uint32_t(g % d.groups[0]), uint32_t(g / d.groups[0] % d.groups[1]),
                            uint32_t(g / (uint64_t(d.groups[0]) * d.groups[1]))};
    run_threadgroup(d, tg);
  }
  free(groups);
  g_phase = "the check of the buffers after the dispatch";
}

}  // namespace mh

using namespace mh;

// ---- services for metal_compat.h -----------------------------------------------

extern "C" void mh_threadgroup_barrier(unsigned flags, unsigned line) {
  g_current->state = AT_BARRIER;
  g_current->barrier_line = line;
  g_current->barrier_flags = flags;
  yield_to_scheduler();
}

extern "C" void* const* mh_simd_collective(const char* op, unsigned line, void* args,
                                           int all_lanes) {
  Fiber* me = g_current;
  Collective& c = collective_of(*me);
  const int lane = int(me->attrs.thread_index_in_simdgroup);
  const int s = int(me->attrs.simdgroup_index_in_threadgroup);
  int exist, live;
  lanes_of(s, &exist, &live);
  if (all_lanes && live != kSimdWidth)
    fatal("divergence", at_line(line),
          "%s needs all 32 lanes of the simdgroup, but only %d exist and %d have not returned",
          op, exist, live);
  if (c.arrived == 0) {
    c.op = op;
    c.line = line;
    c.all_lanes = all_lanes;
    c.first_lane = lane;
    for (void*& a : c.args) a = nullptr;
  } else if (strcmp(c.op, op) != 0 || c.line != line) {
    fatal("divergence", at_line(line),
          "lanes of one simdgroup diverge: lane %d calls %s at @line:%u@ while lane %d waits in "
          "%s at @line:%u@",
          lane, op, line, c.first_lane, c.op, c.line);
  }
  c.args[lane] = args;
  if (++c.arrived < live) {
    me->state = IN_COLLECTIVE;
    yield_to_scheduler();
    if (c.performer != lane + 1) return nullptr;  // performed by another lane
    // The lanes still missing returned from the kernel (fiber_main) or wait
    // at a barrier (run_threadgroup): this one was woken to perform it.
    c.performer = 0;
  }
  report_inactive_lanes(c, s);
  return c.args;  // the last lane performs the operation, then releases the others
}

extern "C" void mh_simd_release(void) {
  Collective& c = collective_of(*g_current);
  const int s = int(g_current->attrs.simdgroup_index_in_threadgroup);
  for (int t = s * kSimdWidth; t < (s + 1) * kSimdWidth && t < g_threads; ++t)
    if (g_fibers[t].state == IN_COLLECTIVE) g_fibers[t].state = RUNNABLE;
  c.arrived = 0;
}

extern "C" uint32_t mh_lane(void) { return g_current->attrs.thread_index_in_simdgroup; }

extern "C" uint32_t mh_simdgroup_index(void) {
  return g_current->attrs.simdgroup_index_in_threadgroup;
}

extern "C" uint32_t mh_simd_lane_count(void) {
  int exist, live;
  lanes_of(int(g_current->attrs.simdgroup_index_in_threadgroup), &exist, &live);
  return uint32_t(exist);
}

extern "C" void* mh_threadgroup_alloc(mh_tg_slot* slot, size_t size, unsigned line,
                                      const char* name) {
  if (slot->generation == g_generation) return slot->data;
  Region* r;
  if (!slot->data) {
    char label[96];
    snprintf(label, sizeof label, "threadgroup variable '%s' (@line:%u@)", name, line);
    // The variable's own size: Metal allocates threadgroup memory in 16-byte
    // units (counted below), but the bytes past the array are no part of it.
    r = new_region(label, THREADGROUP, size, true);
    track_region(*r, true, true);
    slot->data = r->data;
    slot->size = size;
  } else {
    r = find_region(reinterpret_cast<uintptr_t>(slot->data));
  }
  g_threadgroup_bytes += round_up(size, 16);
  if (g_threadgroup_bytes > kThreadgroupMemoryLimit)
    fatal("resources", at_line(line), "the threadgroup variables need %zu bytes; Metal allows %zu",
          g_threadgroup_bytes, kThreadgroupMemoryLimit);
  memset(slot->data, kPoison, size);
  clear_written(*r);
  slot->generation = g_generation;
  return slot->data;
}

extern "C" void* mh_simdgroup_scratch(size_t size) {
  Scratch& s = g_scratch[g_current->attrs.simdgroup_index_in_threadgroup];
  size = round_up(size, 16);
  if (s.used + size > sizeof s.bytes)
    fatal("resources", at_line(0), "too many simdgroup events in one threadgroup");
  void* p = s.bytes + s.used;
  s.used += size;
  memset(p, 0, size);
  return p;
}

extern "C" void mh_count_async_copy(void) { ++g_async_copies; }
