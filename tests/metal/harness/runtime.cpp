// Executes one Metal dispatch on the CPU: the runtime half of the Metal CPU
// harness (the other half, metal_compat.h, is compiled into the kernel).
//
//   runner JOB OUT
//
// JOB (written by driver.py) gives the grid and threadgroup size in threads,
// a seed, which end of each buffer to put against a guard page, and the
// buffers in Metal's binding order, each with the offset at which the kernel's
// pointer into it points (MLX binds an array at its own offset into its
// buffer; with negative strides that is not the buffer's start); OUT receives
// the output buffers. Errors are printed as one line
// "METAL_HARNESS_ERROR <kind> line=<n>: <message>" on stderr, and the runner
// exits with status 3. A run that succeeds ends stderr with one line
// "METAL_HARNESS_STATS <name>=<count> ..." (simdgroup async copies issued).
//
// Semantics modelled:
//   * dispatchThreads: threadgroups of the given size tile the grid; the last
//     one along an axis is partial. Threadgroups run one after another, in a
//     seeded random order (a kernel must not depend on any order).
//   * Threads of a threadgroup are fibers. Each runs until it blocks (at a
//     barrier or a simdgroup function) or returns; then another runnable one
//     runs, in a seeded random order (see run_threadgroup). A thread that reads
//     threadgroup memory another thread writes before the barrier that should
//     separate them reads stale or poisoned data.
//   * Simdgroups are 32 consecutive threads (by thread_index_in_threadgroup).
//     A thread that has returned no longer takes part in barriers (Apple
//     silicon); threads that wait at different barriers, a barrier nobody else
//     reaches, or a simdgroup function that not all 32 lanes reach, are
//     reported.
//   * Memory: every buffer sits against a PROT_NONE guard page (the end, or
//     with align=left the start) and the rest of its page is filled with a
//     canary. Inputs are read-only. Threadgroup variables get the same
//     treatment, poisoned (all bits set: NaN, or -1) for every threadgroup.
//     A touch of a guard page is reported with the buffer and offset, a
//     changed canary after the run as an out-of-bounds write.
#include "runtime.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

namespace {

constexpr int kSimdWidth = 32;
constexpr size_t kThreadgroupMemoryLimit = 32768;  // Apple GPUs: 32 KiB
constexpr size_t kStackSize = 256 * 1024;
constexpr unsigned char kPoison = 0xff;  // float NaN, int -1
// Fills the rest of a buffer's pages: a float NaN too (a quiet NaN with a
// payload), so a read there spoils the result even when multiplied by 0.
constexpr uint32_t kCanary = 0x7fc0dead;
constexpr size_t kGuardPages = 16;  // on each side: 64 KiB of PROT_NONE

size_t g_page_size = 0;  // set first thing in main (no C++ runtime here for guarded statics)
size_t page_size() { return g_page_size; }

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// ---- guarded memory ----------------------------------------------------------

// `size` bytes against guard pages: [guard][canary... data][guard] when the
// data ends at the guard (align_end), [guard][data ...canary][guard] else.
struct Region {
  char name[64];
  char* map = nullptr;
  size_t map_size = 0;
  char* data = nullptr;
  size_t size = 0;
  bool read_only = false;
};

constexpr int kMaxRegions = 256;
Region g_regions[kMaxRegions];
int g_region_count = 0;

Region* new_region(const char* name, size_t size, bool align_end) {
  if (g_region_count == kMaxRegions) {
    fprintf(stderr, "METAL_HARNESS_ERROR internal line=0: too many buffers\n");
    _exit(3);
  }
  Region* r = &g_regions[g_region_count++];
  snprintf(r->name, sizeof r->name, "%s", name);
  const size_t guard = kGuardPages * page_size();
  const size_t body = round_up(size == 0 ? 1 : size, page_size());
  r->map_size = body + 2 * guard;
  void* map = mmap(nullptr, r->map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    perror("mmap");
    _exit(3);
  }
  r->map = static_cast<char*>(map);
  mprotect(r->map + guard, body, PROT_READ | PROT_WRITE);
  uint32_t* words = reinterpret_cast<uint32_t*>(r->map + guard);
  for (size_t i = 0; i < body / 4; ++i) words[i] = kCanary;
  r->size = size;
  r->data = align_end ? r->map + guard + body - size : r->map + guard;
  return r;
}

char* accessible_begin(const Region& r) { return r.map + kGuardPages * page_size(); }
char* accessible_end(const Region& r) { return r.map + r.map_size - kGuardPages * page_size(); }

// The canary byte expected at p (the pattern is laid out from page starts).
unsigned char canary_byte(const char* p) {
  return static_cast<unsigned char>(kCanary >> (8 * (reinterpret_cast<uintptr_t>(p) % 4)));
}

// The canary bytes of a region's accessible pages that surround its data.
bool canary_intact(const Region& r, size_t* bad_offset, bool* before) {
  const char* lo = accessible_begin(r);
  const char* hi = accessible_end(r);
  for (const char* p = lo; p < r.data; ++p) {
    if (static_cast<unsigned char>(*p) != canary_byte(p)) {
      *bad_offset = size_t(r.data - p);
      *before = true;
      return false;
    }
  }
  for (const char* p = r.data + r.size; p < hi; ++p) {
    if (static_cast<unsigned char>(*p) != canary_byte(p)) {
      *bad_offset = size_t(p - (r.data + r.size));
      *before = false;
      return false;
    }
  }
  return true;
}

// ---- fibers and the threadgroup scheduler ------------------------------------

enum State { RUNNABLE, AT_BARRIER, IN_COLLECTIVE, FINISHED };

struct Fiber {
  ucontext_t context;
  char* stack_map = nullptr;  // with a guard page at the bottom
  State state = FINISHED;
  unsigned barrier_line = 0;
  mh_attrs attrs;
};

struct Collective {  // one simdgroup's collective operation in progress
  const char* op = nullptr;
  unsigned line = 0;
  int arrived = 0;
  int all_lanes = 0;
  void* args[kSimdWidth];
  int first_lane = -1;
};

struct Scratch {  // per-simdgroup scratch (async copy events)
  char bytes[4096];
  size_t used = 0;
};

void* const* g_buffers = nullptr;
Fiber* g_fibers = nullptr;
int g_fiber_capacity = 0;
int g_threads = 0;  // threads in the running threadgroup
Collective* g_collectives = nullptr;
Scratch* g_scratch = nullptr;
int g_simdgroups = 0;
Fiber* g_current = nullptr;
ucontext_t g_scheduler;
uint64_t g_generation = 0;  // numbers threadgroups, for threadgroup memory
size_t g_threadgroup_bytes = 0;
uint64_t g_rng = 0;
uint64_t g_async_copies = 0;
const char* g_phase = "setup";

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

void describe_current(char* out, size_t n) {
  if (!g_current) {
    snprintf(out, n, "during %s", g_phase);
    return;
  }
  const mh_attrs& a = g_current->attrs;
  snprintf(out, n, "in threadgroup (%u, %u, %u), thread (%u, %u, %u) (simdgroup %u, lane %u)",
           a.threadgroup_position_in_grid[0], a.threadgroup_position_in_grid[1],
           a.threadgroup_position_in_grid[2], a.thread_position_in_threadgroup[0],
           a.thread_position_in_threadgroup[1], a.thread_position_in_threadgroup[2],
           a.simdgroup_index_in_threadgroup, a.thread_index_in_simdgroup);
}

void fail_v(const char* kind, unsigned line, const char* fmt, va_list ap) {
  char where[160];
  describe_current(where, sizeof where);
  char message[1024];
  vsnprintf(message, sizeof message, fmt, ap);
  fprintf(stderr, "METAL_HARNESS_ERROR %s line=%u: %s (%s)\n", kind, line, message, where);
  fflush(stderr);
  _exit(3);
}

[[noreturn]] void fail(const char* kind, unsigned line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(kind, line, fmt, ap);
  va_end(ap);
  _exit(3);
}

void yield_to_scheduler() { swapcontext(&g_current->context, &g_scheduler); }

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

void fiber_main() {
  mh_launch(g_buffers, &g_current->attrs);
  Fiber* me = g_current;
  me->state = FINISHED;
  // A simdgroup function waiting for this lane can never complete; a
  // simdgroup_barrier no longer waits for it.
  Collective& c = collective_of(*me);
  if (c.arrived > 0) {
    if (c.all_lanes)
      fail("divergence", c.line,
           "a lane returned from the kernel while its simdgroup waits in %s; all 32 lanes "
           "must call it",
           c.op);
    const int s = int(me->attrs.simdgroup_index_in_threadgroup);
    int exist, live;
    lanes_of(s, &exist, &live);
    if (c.arrived == live) {
      for (int t = s * kSimdWidth; t < s * kSimdWidth + exist; ++t)
        if (g_fibers[t].state == IN_COLLECTIVE) g_fibers[t].state = RUNNABLE;
      c.arrived = 0;
    }
  }
  swapcontext(&me->context, &g_scheduler);
}

void init_fiber(Fiber& f) {
  const size_t page = page_size();
  if (!f.stack_map) {
    void* map = mmap(nullptr, kStackSize + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) {
      perror("mmap stack");
      _exit(3);
    }
    f.stack_map = static_cast<char*>(map);
    mprotect(f.stack_map, page, PROT_NONE);
  }
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = f.stack_map + page;
  f.context.uc_stack.ss_size = kStackSize;
  f.context.uc_link = nullptr;
  makecontext(&f.context, fiber_main, 0);
  f.state = RUNNABLE;
}

struct Dispatch {
  uint32_t grid[3];
  uint32_t group[3];  // threadgroup size, clamped to the grid as MLX does
  uint32_t groups[3];
};

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
  swapcontext(&g_scheduler, &f.context);
  g_current = nullptr;
}

void report_stuck_threads() {
  // Nobody can run and not everyone is at a threadgroup barrier.
  char detail[768];
  size_t used = 0;
  for (int t = 0; t < g_threads && used + 96 < sizeof detail; ++t) {
    const Fiber& f = g_fibers[t];
    if (f.state == AT_BARRIER)
      used += size_t(snprintf(detail + used, sizeof detail - used,
                              "thread %d at threadgroup_barrier (line %u); ", t, f.barrier_line));
    else if (f.state == IN_COLLECTIVE)
      used += size_t(snprintf(detail + used, sizeof detail - used, "thread %d in %s (line %u); ",
                              t, collective_of(f).op, collective_of(f).line));
  }
  g_current = nullptr;
  fail("deadlock", 0, "threads wait for each other at different places: %s", detail);
}

void run_threadgroup(const Dispatch& d, const uint32_t tg[3], int* order) {
  uint32_t size[3];
  for (int i = 0; i < 3; ++i) {
    const uint32_t start = tg[i] * d.group[i];
    size[i] = d.grid[i] - start < d.group[i] ? d.grid[i] - start : d.group[i];
  }
  g_threads = int(size[0] * size[1] * size[2]);
  g_simdgroups = (g_threads + kSimdWidth - 1) / kSimdWidth;
  ++g_generation;
  g_threadgroup_bytes = 0;
  for (int s = 0; s < g_simdgroups; ++s) {
    memset(&g_collectives[s], 0, sizeof(Collective));
    g_scratch[s].used = 0;
  }
  for (int t = 0; t < g_threads; ++t) {
    init_fiber(g_fibers[t]);
    set_attrs(d, tg, size, t, g_fibers[t].attrs);
  }
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
    int sg_order[1024 / kSimdWidth];
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
    // Nobody can run: everyone has returned, or waits at a barrier.
    int waiting = 0, finished = 0;
    unsigned line = 0;
    for (int t = 0; t < g_threads; ++t) {
      const Fiber& f = g_fibers[t];
      if (f.state == FINISHED) {
        ++finished;
      } else if (f.state == AT_BARRIER) {
        if (waiting > 0 && f.barrier_line != line) {
          g_current = nullptr;
          fail("divergence", f.barrier_line,
               "threads of one threadgroup wait at different threadgroup_barriers (lines %u "
               "and %u); all must reach the same one",
               line, f.barrier_line);
        }
        line = f.barrier_line;
        ++waiting;
      }
    }
    if (finished == g_threads) break;
    if (waiting + finished != g_threads) report_stuck_threads();
    for (int t = 0; t < g_threads; ++t)
      if (g_fibers[t].state == AT_BARRIER) g_fibers[t].state = RUNNABLE;
    new_phase();
  }
  // Out-of-bounds writes into the slack around threadgroup variables.
  for (int r = 0; r < g_region_count; ++r) {
    size_t offset;
    bool before;
    if (strncmp(g_regions[r].name, "threadgroup", 11) == 0 &&
        !canary_intact(g_regions[r], &offset, &before))
      fail("out_of_bounds", 0, "a write %zu bytes %s %s", offset,
           before ? "before the start of" : "past the end of", g_regions[r].name);
  }
}

// ---- faults ------------------------------------------------------------------

char g_signal_stack[64 * 1024];

void on_fault(int sig, siginfo_t* info, void* context) {
  const char* address = static_cast<const char*>(info->si_addr);
  const bool write =
      sig == SIGSEGV && (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2);
  const char* access = write ? "write" : "read";
  if (sig == SIGILL || sig == SIGTRAP)
    fail("out_of_bounds", 0,
         "trap: an index outside a fixed-size array (clang -fsanitize=array-bounds), e.g. a "
         "threadgroup tile, or another trapping check");
  if (sig == SIGFPE) fail("crash", 0, "arithmetic exception (integer division by zero?)");
  const size_t page = page_size();
  for (int r = 0; r < g_region_count; ++r) {
    const Region& reg = g_regions[r];
    if (address < reg.map || address >= reg.map + reg.map_size) continue;
    if (address >= reg.data && address < reg.data + reg.size && reg.read_only)
      fail("read_only", 0, "a write to input buffer %s (byte %td of %zu)", reg.name,
           address - reg.data, reg.size);
    if (address < reg.data)
      fail("out_of_bounds", 0, "a %s %td bytes before the start of %s (%zu bytes)", access,
           reg.data - address, reg.name, reg.size);
    fail("out_of_bounds", 0, "a %s %td bytes past the end of %s (%zu bytes)", access,
         address - (reg.data + reg.size), reg.name, reg.size);
  }
  for (int t = 0; t < g_fiber_capacity; ++t) {
    const char* guard = g_fibers[t].stack_map;
    if (guard && address >= guard && address < guard + page)
      fail("crash", 0, "stack overflow of a kernel thread (%zu KiB stacks)", kStackSize / 1024);
  }
  fail("crash", 0, "a %s of address %p, which is no buffer (signal %d)", access,
       static_cast<const void*>(address), sig);
}

void install_fault_handlers() {
  stack_t ss;
  ss.ss_sp = g_signal_stack;
  ss.ss_size = sizeof g_signal_stack;
  ss.ss_flags = 0;
  sigaltstack(&ss, nullptr);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE};
  for (int sig : signals) sigaction(sig, &sa, nullptr);
}

// ---- the job -----------------------------------------------------------------

void read_exact(FILE* f, void* out, size_t n) {
  if (fread(out, 1, n, f) != n) {
    fprintf(stderr, "METAL_HARNESS_ERROR internal line=0: truncated job file\n");
    _exit(3);
  }
}

uint64_t read_u64(FILE* f) {
  uint64_t v;
  read_exact(f, &v, sizeof v);
  return v;
}

}  // namespace

// ---- services for metal_compat.h -----------------------------------------------

extern "C" void mh_fail(const char* kind, unsigned line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(kind, line, fmt, ap);
  va_end(ap);
  _exit(3);
}

extern "C" void mh_threadgroup_barrier(unsigned flags, unsigned line) {
  (void)flags;
  g_current->state = AT_BARRIER;
  g_current->barrier_line = line;
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
    fail("divergence", line,
         "%s needs all 32 lanes of the simdgroup, but only %d exist and %d have not returned",
         op, exist, live);
  if (c.arrived == 0) {
    c.op = op;
    c.line = line;
    c.all_lanes = all_lanes;
    c.first_lane = lane;
    for (void*& a : c.args) a = nullptr;
  } else if (strcmp(c.op, op) != 0 || c.line != line) {
    fail("divergence", line,
         "lanes of one simdgroup diverge: lane %d calls %s (line %u) while lane %d waits in %s "
         "(line %u)",
         lane, op, line, c.first_lane, c.op, c.line);
  }
  c.args[lane] = args;
  if (++c.arrived < live) {
    me->state = IN_COLLECTIVE;
    yield_to_scheduler();
    return nullptr;
  }
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

extern "C" void* mh_threadgroup_alloc(mh_tg_slot* slot, size_t size, unsigned line) {
  if (slot->generation == g_generation) return slot->data;
  if (!slot->data) {
    char name[64];
    snprintf(name, sizeof name, "threadgroup variable declared at line %u", line);
    // Metal allocates threadgroup memory in 16-byte units.
    Region* r = new_region(name, round_up(size, 16), true);
    slot->data = r->data;
    slot->size = size;
  }
  g_threadgroup_bytes += round_up(size, 16);
  if (g_threadgroup_bytes > kThreadgroupMemoryLimit)
    fail("resources", line, "the threadgroup variables need %zu bytes; Metal allows %zu",
         g_threadgroup_bytes, kThreadgroupMemoryLimit);
  memset(slot->data, kPoison, round_up(size, 16));
  slot->generation = g_generation;
  return slot->data;
}

extern "C" void* mh_simdgroup_scratch(size_t size) {
  Scratch& s = g_scratch[g_current->attrs.simdgroup_index_in_threadgroup];
  size = round_up(size, 16);
  if (s.used + size > sizeof s.bytes)
    fail("resources", 0, "too many simdgroup events in one threadgroup");
  void* p = s.bytes + s.used;
  s.used += size;
  memset(p, 0, size);
  return p;
}

extern "C" void mh_count_async_copy(void) { ++g_async_copies; }

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s JOB OUT\n", argv[0]);
    return 2;
  }
  g_page_size = size_t(sysconf(_SC_PAGESIZE));
  FILE* job = fopen(argv[1], "rb");
  if (!job) {
    perror(argv[1]);
    return 2;
  }
  char magic[8];
  read_exact(job, magic, 8);
  if (memcmp(magic, "MHJOB002", 8) != 0) {
    fprintf(stderr, "METAL_HARNESS_ERROR internal line=0: not a job file\n");
    return 3;
  }
  Dispatch d;
  for (uint32_t& g : d.grid) g = uint32_t(read_u64(job));
  for (uint32_t& t : d.group) t = uint32_t(read_u64(job));
  g_rng = read_u64(job) * 0x9E3779B97F4A7C15ULL + 1;
  const uint64_t align_end = read_u64(job);
  const int nbuf = int(read_u64(job));
  if (nbuf != mh_buffer_count) {
    fprintf(stderr,
            "METAL_HARNESS_ERROR internal line=0: the kernel binds %d buffers, the job has %d\n",
            mh_buffer_count, nbuf);
    return 3;
  }
  void** buffers = static_cast<void**>(calloc(size_t(nbuf), sizeof(void*)));
  Region** regions = static_cast<Region**>(calloc(size_t(nbuf), sizeof(Region*)));
  bool* is_output = static_cast<bool*>(calloc(size_t(nbuf), sizeof(bool)));
  for (int i = 0; i < nbuf; ++i) {
    char name[40] = {0};
    read_exact(job, name, 32);
    is_output[i] = read_u64(job) != 0;
    const size_t size = size_t(read_u64(job));
    const size_t offset = size_t(read_u64(job));  // where in the buffer the kernel's pointer points
    if (offset != 0 && offset >= size) {
      fprintf(stderr, "METAL_HARNESS_ERROR internal line=0: offset %zu outside buffer %d\n",
              offset, i);
      return 3;
    }
    char label[64];
    snprintf(label, sizeof label, "buffer(%d) %s", i, name);
    Region* r = new_region(label, size, align_end != 0);
    if (is_output[i]) {
      memset(r->data, kPoison, size);  // as ops.poisoned_outputs: NaN everywhere
    } else {
      read_exact(job, r->data, size);
      mprotect(accessible_begin(*r), size_t(accessible_end(*r) - accessible_begin(*r)), PROT_READ);
      r->read_only = true;
    }
    buffers[i] = r->data + offset;
    regions[i] = r;
  }
  fclose(job);

  // MLX: group_dims = min(threadgroup, grid) on each axis.
  for (int i = 0; i < 3; ++i) {
    if (d.grid[i] == 0 || d.group[i] == 0) {
      fprintf(stderr, "METAL_HARNESS_ERROR internal line=0: empty grid or threadgroup\n");
      return 3;
    }
    if (d.group[i] > d.grid[i]) d.group[i] = d.grid[i];
    d.groups[i] = (d.grid[i] + d.group[i] - 1) / d.group[i];
  }
  const uint32_t threads = d.group[0] * d.group[1] * d.group[2];
  if (threads > 1024) {
    fprintf(stderr,
            "METAL_HARNESS_ERROR resources line=0: %u threads per threadgroup; Metal allows "
            "1024\n",
            threads);
    return 3;
  }
  g_buffers = buffers;
  g_fiber_capacity = int(threads);
  // calloc, not new: the runner links without a C++ runtime library.
  const uint32_t simdgroups = (threads + kSimdWidth - 1) / kSimdWidth;
  g_fibers = static_cast<Fiber*>(calloc(threads, sizeof(Fiber)));
  g_collectives = static_cast<Collective*>(calloc(simdgroups, sizeof(Collective)));
  g_scratch = static_cast<Scratch*>(calloc(simdgroups, sizeof(Scratch)));
  int* order = static_cast<int*>(calloc(threads, sizeof(int)));
  install_fault_handlers();

  const uint64_t total = uint64_t(d.groups[0]) * d.groups[1] * d.groups[2];
  uint64_t* groups = static_cast<uint64_t*>(calloc(total, sizeof(uint64_t)));
  for (uint64_t i = 0; i < total; ++i) groups[i] = i;
  shuffle(groups, total);
  g_phase = "the dispatch";
  for (uint64_t i = 0; i < total; ++i) {
    const uint64_t g = groups[i];
    const uint32_t tg[3] = {uint32_t(g % d.groups[0]), uint32_t(g / d.groups[0] % d.groups[1]),
                            uint32_t(g / (uint64_t(d.groups[0]) * d.groups[1]))};
    run_threadgroup(d, tg, order);
  }
  g_phase = "the check of the buffers after the dispatch";

  FILE* out = fopen(argv[2], "wb");
  if (!out) {
    perror(argv[2]);
    return 2;
  }
  for (int i = 0; i < nbuf; ++i) {
    size_t offset;
    bool before;
    if (!canary_intact(*regions[i], &offset, &before))
      fail("out_of_bounds", 0, "a write %zu bytes %s %s", offset,
           before ? "before the start of" : "past the end of", regions[i]->name);
    if (is_output[i]) fwrite(regions[i]->data, 1, regions[i]->size, out);
  }
  fclose(out);
  fprintf(stderr, "METAL_HARNESS_STATS async_copies=%llu\n",
          static_cast<unsigned long long>(g_async_copies));
  return 0;
}
