// What the runtime's own files share (not the kernel's business: runtime.h is).
//
//   context.cpp        switching between the scheduler and the threads
//   job.cpp            reads the job, lays out the buffers, runs the dispatch,
//                      writes the outputs
//   scheduler.cpp      threads as fibers, threadgroups, barriers, simdgroup
//                      collectives (synccheck)
//   memory.cpp         guarded regions for buffers and threadgroup variables,
//                      canaries, faults
//   access_checks.cpp  every load and store: memcheck, initcheck, racecheck
//   findings.cpp       what the checks found, deduplicated, for the Python side
//
// The runner links without a C++ runtime library: no new/delete, no
// exceptions, no statics with constructors (calloc and plain structs).
#ifndef METAL_HARNESS_RUNTIME_INTERNAL_H
#define METAL_HARNESS_RUNTIME_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "context.h"
#include "runtime.h"

namespace mh {

constexpr int kSimdWidth = 32;
constexpr int kMaxThreads = 1024;                   // per threadgroup, as Metal
constexpr size_t kThreadgroupMemoryLimit = 32768;  // Apple GPUs: 32 KiB
constexpr size_t kStackSize = 256 * 1024;
constexpr unsigned char kPoison = 0xff;  // float NaN, int -1

size_t page_size();
inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// ---- where an access or a finding happened ---------------------------------

// A return address into the kernel's code, relative to the executable's ELF
// header (the Python side maps it to a source line through the debug
// information), and/or a line of the generated Metal source (0: unknown).
struct Site {
  uintptr_t pc;
  unsigned line;
};
uintptr_t relative_pc(const void* pc);

// ---- regions of memory the kernel may touch ----------------------------------

enum RegionKind { INPUT, OUTPUT, THREADGROUP };

// One buffer or threadgroup variable: `size` bytes at `data` with accessible
// canary-filled slack around them and PROT_NONE guard pages beyond (memory.cpp).
struct Region {
  char name[96];
  RegionKind kind;
  char* map = nullptr;  // the whole mapping, guards included
  size_t map_size = 0;
  char* data = nullptr;
  size_t size = 0;
  bool read_only = false;
  // initcheck: one byte per data byte, nonzero once written (null: not tracked).
  uint8_t* written = nullptr;
  // racecheck: one cell per data byte (threadgroup variables only).
  struct RaceCell* race = nullptr;
  // racecheck: per data byte of an output, its last writer (which threadgroup).
  struct WriterCell* writers = nullptr;
  // memcheck has reported an instrumented write outside the data: the canary
  // check after the run need not report the changed slack again.
  bool overrun_reported = false;
};

Region* new_region(const char* name, RegionKind kind, size_t size, bool align_end);
Region* find_region(uintptr_t address);  // the region whose mapping holds it
int region_count();
Region* region(int i);
void make_read_only(Region& r);
// Report an out-of-bounds write no instrumented store made (a changed canary
// byte in the slack around the data; memcheck), then restore the canary.
void check_canary(Region& r);
void install_fault_handlers();

// ---- threads ------------------------------------------------------------------

enum State { RUNNABLE, AT_BARRIER, IN_COLLECTIVE, FINISHED };

struct Fiber {
  Context context;
  char* stack_map = nullptr;  // with a guard page at the bottom
  State state = FINISHED;
  unsigned barrier_line = 0;
  unsigned barrier_flags = 0;
  // Edges of the kernel's code this thread has taken (access_checks.cpp):
  // lanes of a simdgroup in lockstep store together after as many
  // (racecheck's "same step").
  uint32_t steps = 0;
  mh_attrs attrs;
};

extern Fiber* g_current;  // the running thread, null in the scheduler
extern Fiber* g_fibers;   // the threads of the running threadgroup
extern int g_fiber_capacity;
extern int g_threads;     // threads in the running threadgroup
extern const char* g_phase;
extern uint64_t g_async_copies;
extern uint64_t g_generation;  // numbers the threadgroups run so far (the running one's)

// "threadgroup (x, y, z), thread (x, y, z) (simdgroup s, lane l)"
void describe_thread(const Fiber& f, char* out, size_t n);
void describe_current(char* out, size_t n);

// The interval between two threadgroup barriers that order threadgroup
// memory: every access carries the one it was made in (racecheck), and the
// count of barriers of any kind, to say when one without mem_threadgroup
// stood between two accesses.
extern uint64_t g_interval;
extern uint32_t g_barriers_passed;
extern unsigned g_interval_start_line;  // 0: the start of the threadgroup
extern unsigned g_last_barrier_line;

struct Dispatch {
  uint32_t grid[3];
  uint32_t group[3];  // threadgroup size, clamped to the grid as MLX does
  uint32_t groups[3];
};
void start_dispatch(const Dispatch& d, void* const* buffers, uint64_t seed);
void run_dispatch(const Dispatch& d);

// ---- access checks --------------------------------------------------------------

// Turn on initcheck (`init`: a byte-per-byte record of what was written) and
// racecheck (`races`: threadgroup memory) for a region.
void track_region(Region& r, bool init, bool races);
// racecheck of an output: two threadgroups writing one byte without atomics.
void track_writers(Region& r);
// Whether `address` lies in the last access memcheck reported out of bounds
// (the fault it then causes needs no second report).
bool reported_out_of_bounds(const void* address);
// initcheck: nothing of the region written yet (a threadgroup variable when
// a threadgroup starts).
void clear_written(Region& r);

// ---- findings ---------------------------------------------------------------------

// Count a finding (deduplicated by kind, sites and `key`). Returns the buffer
// (of kMessageSize bytes) its message goes into when it is new, null when it
// repeats one already kept (or there is no room left): a check that finds
// the same thing a million times formats its message once.
constexpr size_t kMessageSize = 640;
char* new_finding(const char* check, const char* kind, Site first, Site second, int key);
// Record a finding (new_finding, and its message formatted when it is new).
// `check` is memcheck, racecheck, synccheck or initcheck.
__attribute__((format(printf, 6, 7))) void add_finding(
    const char* check, const char* kind, Site first, Site second, int key,
    const char* fmt, ...);
// Record a finding that ends the run, write every finding, exit with status 3.
[[noreturn]] __attribute__((format(printf, 3, 4))) void fatal(
    const char* kind, Site site, const char* fmt, ...);
[[noreturn]] void fatal_v(const char* kind, Site site, const char* fmt, va_list ap);
// The check a kind of finding belongs to (memcheck, synccheck, ...; "error").
const char* check_of(const char* kind);
// End the run after a finding already recorded: write every finding, exit 3.
[[noreturn]] void abort_run();
void write_findings();
// A one-line error about the job itself (not the kernel); exits with status 3.
[[noreturn]] void internal_error(const char* message);

}  // namespace mh

#endif  // METAL_HARNESS_RUNTIME_INTERNAL_H
