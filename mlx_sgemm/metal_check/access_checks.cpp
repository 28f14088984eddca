// Every load and store of the kernel, checked: memcheck, initcheck, racecheck.
//
// The kernel's translation unit is compiled with clang's
// -fsanitize-coverage=trace-loads,trace-stores, which calls
// __sanitizer_cov_load<N> / __sanitizer_cov_store<N> with the address before
// each N-byte load or store the optimized code still makes (N = 1, 2, 4, 8,
// 16; vectorization is off, so nothing wider). The callback's return address
// says where: the Python side maps it to a line of the Metal source through
// the debug information (#line directives make those lines the .metal file's).
// Accesses to a thread's own stack are skipped at once; the rest are looked up
// among the regions of memory.cpp:
//
//   memcheck   an access outside the region's data (into its slack or guards):
//              which buffer, how far off, which thread, which line. A write
//              to an input ends the run (inputs are read-only).
//   initcheck  per byte of each threadgroup variable (fresh per threadgroup)
//              and of each output MLX would leave uninitialized (no
//              init_value): a read of a byte nothing has written.
//   racecheck  per byte of threadgroup memory, the accesses since the last
//              threadgroup barrier that orders threadgroup memory: the last
//              writer and the first readers of two simdgroups. A write and any
//              other access by threads of different simdgroups in the same
//              interval is a race, whatever order the scheduler ran them in:
//              the verdict does not depend on an unlucky interleaving. Lanes of
//              one simdgroup are compared only for stores to one byte in the
//              same step (Apple GPUs run them in lockstep). For outputs, per
//              byte the last writer's threadgroup: two threadgroups writing
//              one byte without atomics.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

namespace mh {

// One access remembered for racecheck.
struct Access {
  uint16_t tid;  // thread_index_in_threadgroup
  uint8_t valid;
  uint8_t write;
  unsigned line;
  uint32_t barriers;  // g_barriers_passed when it was made
  uint32_t step;  // the thread's count of edges taken (Fiber::steps) when it was made
  uintptr_t pc;
};

// The last write to one byte of an output: which threadgroup, which thread, where.
struct WriterCell {
  uint64_t group;  // g_generation of the threadgroup; 0: never written
  uint32_t tg[3];
  uint32_t thread[3];
  unsigned line;
  uintptr_t pc;
};

// What racecheck knows about one byte of threadgroup memory in one interval.
struct RaceCell {
  uint64_t interval;
  Access writer;  // the last write
  Access reader;  // the first read
  Access other_reader;  // the first read by a simdgroup other than `reader`'s
};

namespace {

int g_untraced = 0;
uintptr_t g_oob_begin = 0, g_oob_end = 0;  // the last access reported out of bounds
int g_site_depth = 0;
Site g_site = {0, 0};

Site site_of(const void* return_address) {
  return g_site_depth > 0 ? g_site : Site{relative_pc(return_address), 0};
}

int key_of(const Region& r) { return int(&r - region(0)); }

uint32_t simdgroup_of(uint16_t tid) { return tid / kSimdWidth; }

const char* access_name(bool write) { return write ? "write" : "read"; }

// "a" or "an" before a number of bytes, as it is read aloud.
const char* article(size_t n) {
  return n == 8 || n == 11 || n == 18 || (n >= 80 && n < 90) ? "an" : "a";
}

void report_out_of_bounds(Region& r, uintptr_t a, size_t n, bool write, Site s) {
  if (write) r.overrun_reported = true;
  g_oob_begin = a;
  g_oob_end = a + n;
  char* message = new_finding("memcheck", "out_of_bounds", s, Site{0, 0}, key_of(r));
  if (!message) return;
  char thread[192];
  describe_current(thread, sizeof thread);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(r.data), hi = lo + r.size;
  snprintf(message, kMessageSize, "%s %zu-byte %s %zu bytes %s %s (%zu bytes) (%s)", article(n),
           n, access_name(write), size_t(a < lo ? lo - a : a + n - hi),
           a < lo ? "before the start of" : "past the end of", r.name, r.size, thread);
}

void initcheck(Region& r, size_t off, size_t n, int flags, Site s) {
  if (flags & MH_DMA) {  // the copy engine owns these bytes until the wait
    memset(r.written + off, 0, n);
    return;
  }
  if (flags & MH_READ) {
    for (size_t i = off; i < off + n; ++i) {
      if (r.written[i]) continue;
      char* message = new_finding("initcheck", "uninitialized", s, Site{0, 0}, key_of(r));
      if (message) {
        char thread[192];
        describe_current(thread, sizeof thread);
        snprintf(message, kMessageSize, "%s %zu-byte read of %s at byte %zu, which %s (%s)",
                 article(n), n, r.name, i,
                 r.kind == THREADGROUP
                     ? "no thread of this threadgroup has written"
                     : "nothing has written: MLX leaves outputs uninitialized unless init_value "
                       "is given",
                 thread);
      }
      break;
    }
  }
  if (flags & MH_WRITE) memset(r.written + off, 1, n);
}

void describe_access(const Access& a, char* out, size_t size) {
  char thread[192];
  describe_thread(g_fibers[a.tid], thread, sizeof thread);
  snprintf(out, size, "a %s by %s", access_name(a.write), thread);
}

// A race on byte `byte` of `r` between two accesses: of two simdgroups with no
// barrier between them, or (`same_step`) two stores of lanes of one
// simdgroup in the same step (after as many edges of the code: lanes run in
// lockstep), where which value lands is undefined.
void report_race(const Region& r, size_t byte, const Access& first, const Access& second,
                 bool same_step) {
  char* message = new_finding("racecheck", "race", Site{first.pc, first.line},
                              Site{second.pc, second.line}, key_of(r));
  if (!message) return;
  char a[256], b[256];
  describe_access(first, a, sizeof a);
  describe_access(second, b, sizeof b);
  char why[320];
  if (same_step) {
    snprintf(why, sizeof why,
             "in the same step: two lanes of one simdgroup store to one address together, and "
             "which value lands is undefined");
  } else {
    char since[96];
    if (g_interval_start_line)
      snprintf(since, sizeof since, "since the threadgroup_barrier at @line:%u@",
               g_interval_start_line);
    else
      snprintf(since, sizeof since, "since the threadgroup started");
    char hint[192] = "";
    if (first.barriers != second.barriers)
      snprintf(hint, sizeof hint,
               "; the threadgroup_barrier at @line:%u@ between them orders no threadgroup memory "
               "(no mem_flags::mem_threadgroup)",
               g_last_barrier_line);
    snprintf(why, sizeof why, "with no threadgroup barrier between them (%s%s)", since, hint);
  }
  snprintf(message, kMessageSize, "%s and %s, of byte %zu of %s, %s", a, b, byte, r.name, why);
}

void racecheck(Region& r, size_t off, size_t n, bool write, Site s) {
  const uint16_t me = uint16_t(g_current->attrs.thread_index_in_threadgroup);
  const uint32_t sg = simdgroup_of(me);
  const Access mine{me, 1, uint8_t(write), s.line, g_barriers_passed, g_current->steps, s.pc};
  bool reported = false;
  for (size_t i = off; i < off + n; ++i) {
    RaceCell& c = r.race[i];
    if (c.interval != g_interval) {
      memset(&c, 0, sizeof c);
      c.interval = g_interval;
    }
    if (write && !reported && c.writer.valid && c.writer.tid != me &&
        simdgroup_of(c.writer.tid) == sg && s.pc && c.writer.pc == s.pc &&
        c.writer.step == mine.step) {
      report_race(r, i, c.writer, mine, true);
      reported = true;
    }
    const Access* other = nullptr;
    if (c.writer.valid && simdgroup_of(c.writer.tid) != sg)
      other = &c.writer;
    else if (write && c.reader.valid && simdgroup_of(c.reader.tid) != sg)
      other = &c.reader;
    else if (write && c.other_reader.valid && simdgroup_of(c.other_reader.tid) != sg)
      other = &c.other_reader;
    if (other && !reported) {
      report_race(r, i, *other, mine, false);
      reported = true;
    }
    if (write)
      c.writer = mine;
    else if (!c.reader.valid)
      c.reader = mine;
    else if (!c.other_reader.valid && simdgroup_of(c.reader.tid) != sg)
      c.other_reader = mine;
  }
}

// The thread whose index past a threadgroup array's end was just reported
// (__ubsan_handle_out_of_bounds): the access it makes next is that one, and
// needs no second report.
const Fiber* g_index_reported_by = nullptr;

// Two threadgroups writing one byte of an output, neither atomically:
// threadgroups run in no set order, so which value is left is undefined.
void output_racecheck(Region& r, size_t off, size_t n, Site s) {
  const mh_attrs& me = g_current->attrs;
  bool reported = false;
  for (size_t i = off; i < off + n; ++i) {
    WriterCell& c = r.writers[i];
    if (c.group && c.group != g_generation && !reported) {
      reported = true;
      char* message = new_finding("racecheck", "race", Site{c.pc, c.line}, s, key_of(r));
      if (message) {
        char thread[192];
        describe_current(thread, sizeof thread);
        snprintf(message, kMessageSize,
                 "a write by threadgroup (%u, %u, %u), thread (%u, %u, %u) and a write by %s, of "
                 "byte %zu of %s, from two threadgroups without atomics: threadgroups run in no "
                 "set order, so which value is left is undefined",
                 c.tg[0], c.tg[1], c.tg[2], c.thread[0], c.thread[1], c.thread[2], thread, i,
                 r.name);
      }
    }
    c.group = g_generation;
    for (int k = 0; k < 3; ++k) {
      c.tg[k] = me.threadgroup_position_in_grid[k];
      c.thread[k] = me.thread_position_in_threadgroup[k];
    }
    c.line = s.line;
    c.pc = s.pc;
  }
}

void check_access(Region& r, uintptr_t a, size_t n, int flags, Site s) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(r.data);
  const bool write = (flags & (MH_WRITE | MH_DMA)) != 0;
  if (a < lo || a + n > lo + r.size) {
    if (g_index_reported_by == g_current && r.kind == THREADGROUP) {
      g_index_reported_by = nullptr;
      if (write) r.overrun_reported = true;  // the canary check need not say it again
    } else {
      report_out_of_bounds(r, a, n, write, s);
    }
    return;
  }
  if (write && r.read_only)
    fatal("read_only", s, "a write to input buffer %s (byte %zu of %zu)", r.name,
          size_t(a - lo), r.size);
  const size_t off = a - lo;
  if (r.written) initcheck(r, off, n, flags, s);
  if (r.race && !(flags & MH_ATOMIC)) racecheck(r, off, n, write, s);
  if (r.writers && write && !(flags & MH_ATOMIC)) output_racecheck(r, off, n, s);
}

inline void on_access(const void* p, size_t n, int flags, const void* return_address) {
  const Fiber* f = g_current;
  if (!f || g_untraced) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  // The thread's own stack (its locals, spilled registers): nothing to check.
  if (a - reinterpret_cast<uintptr_t>(f->stack_map) < kStackSize + page_size()) return;
  Region* r = find_region(a);
  if (r) check_access(*r, a, n, flags, site_of(return_address));
}

}  // namespace

void track_region(Region& r, bool init, bool races) {
  // calloc: zeroed, i.e. nothing written, no access in any interval.
  if (init) r.written = static_cast<uint8_t*>(calloc(r.size ? r.size : 1, 1));
  if (races) r.race = static_cast<RaceCell*>(calloc(r.size ? r.size : 1, sizeof(RaceCell)));
  if ((init && !r.written) || (races && !r.race)) internal_error("out of memory for the checks");
}

void track_writers(Region& r) {
  r.writers = static_cast<WriterCell*>(calloc(r.size ? r.size : 1, sizeof(WriterCell)));
  if (!r.writers) internal_error("out of memory for the checks");
}

bool reported_out_of_bounds(const void* address) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  return a >= g_oob_begin && a < g_oob_end;
}

void clear_written(Region& r) {
  if (r.written) memset(r.written, 0, r.size);
}

}  // namespace mh

using namespace mh;

#define MH_ACCESS_HOOKS(N)                                                       \
  extern "C" void __sanitizer_cov_load##N(void* p) {                            \
    on_access(p, N, MH_READ, __builtin_return_address(0));                      \
  }                                                                              \
  extern "C" void __sanitizer_cov_store##N(void* p) {                           \
    on_access(p, N, MH_WRITE, __builtin_return_address(0));                     \
  }
MH_ACCESS_HOOKS(1)
MH_ACCESS_HOOKS(2)
MH_ACCESS_HOOKS(4)
MH_ACCESS_HOOKS(8)
MH_ACCESS_HOOKS(16)
#undef MH_ACCESS_HOOKS

// Each edge between basic blocks of the kernel's code a thread takes: its
// count is the thread's "step" (Fiber::steps). Lanes in lockstep that store
// to one address at the same store after as many edges store together; a
// lane that stores in a later iteration of a loop has taken more edges.
extern "C" void __sanitizer_cov_trace_pc_guard_init(uint32_t*, uint32_t*) {}
extern "C" void __sanitizer_cov_trace_pc_guard(uint32_t*) {
  if (g_current && g_site_depth == 0) ++g_current->steps;
}

extern "C" void mh_access(const void* p, size_t size, int flags, unsigned line) {
  if (!g_current) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Region* r = find_region(a);
  if (!r) return;
  const Site s = line ? Site{0, line} : g_site_depth > 0 ? g_site : Site{0, 0};
  check_access(*r, a, size, flags, s);
}

// memcheck of a fixed-size array (threadgroup or thread-local) indexed past
// its end: clang's -fsanitize=array-bounds, recoverable, calls this with the
// expression's line and column (#line makes them the MLX source's) and the
// array's type, before the access. Reported, and the run goes on; the access
// itself then lands in the slack of a threadgroup variable (harmless), or on
// the thread's stack past a thread-local array.
namespace {
struct UbsanLocation {
  const char* file;
  uint32_t line;
  uint32_t column;
};
struct UbsanType {
  uint16_t kind;  // 0: integer
  uint16_t info;  // integers: bit 0 signed, the rest log2 of the width
  char name[1];
};
struct UbsanOutOfBounds {
  UbsanLocation location;
  const UbsanType* array;
  const UbsanType* index;
};

bool is_kernel_source(const char* file) {
  const char* base = strrchr(file, '/');
  return strcmp(base ? base + 1 : file, "mlx_kernel.metal") == 0;
}
}  // namespace

extern "C" void __ubsan_handle_out_of_bounds(UbsanOutOfBounds* data, uintptr_t index) {
  g_index_reported_by = g_current;
  const Site site{relative_pc(__builtin_return_address(0)),
                  is_kernel_source(data->location.file) ? data->location.line : 0};
  char* message = new_finding("memcheck", "out_of_bounds", site, Site{0, 0}, -2);
  if (!message) return;
  long long value = (long long)index;
  const UbsanType* t = data->index;
  if (t->kind == 0 && !(t->info & 1) && (1u << (t->info >> 1)) < 64) value = (long long)index;
  if (t->kind == 0 && (t->info & 1) && (1u << (t->info >> 1)) == 32) value = (int32_t)index;
  char thread[192];
  describe_current(thread, sizeof thread);
  snprintf(message, kMessageSize,
           "index %lld outside the fixed-size array @array:%u@ of type %s (a threadgroup or "
           "thread-local array) (%s)",
           value, data->location.column, data->array->name, thread);
}

extern "C" void __ubsan_handle_out_of_bounds_abort(UbsanOutOfBounds* data, uintptr_t index) {
  __ubsan_handle_out_of_bounds(data, index);
}

extern "C" void mh_site_push(unsigned line, const void* pc) {
  g_site = Site{line ? 0 : relative_pc(pc), line};
  ++g_site_depth;
}

extern "C" void mh_site_pop(void) { --g_site_depth; }

extern "C" void mh_untraced_begin(void) { ++g_untraced; }
extern "C" void mh_untraced_end(void) { --g_untraced; }
