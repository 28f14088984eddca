// The interface between a compiled Metal kernel (metal_compat.h + the kernel's
// translation unit) and the CPU runtime that executes and checks it
// (scheduler.cpp, memory.cpp, access_checks.cpp, findings.cpp, job.cpp).
//
// Plain C types only: the runtime is compiled without the Metal compatibility
// macros (`device`, `constant`, ... would clash with ordinary identifiers).
#ifndef METAL_HARNESS_RUNTIME_H
#define METAL_HARNESS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Every thread-position attribute MLX can put in a signature (the list in
// mlx_sgemm/build/signatures.py, METAL_ATTRIBUTES), as the runtime computes them for
// one thread. The generated launcher passes the ones the kernel declares.
struct mh_attrs {
  uint32_t thread_position_in_grid[3];
  uint32_t thread_position_in_threadgroup[3];
  uint32_t threadgroup_position_in_grid[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t threads_per_grid[3];
  uint32_t grid_size[3];
  uint32_t grid_origin[3];
  uint32_t threads_per_threadgroup[3];           // this group's size (partial at edges)
  uint32_t dispatch_threads_per_threadgroup[3];  // the size the dispatch asked for
  uint32_t thread_index_in_threadgroup;
  uint32_t simdgroup_index_in_threadgroup;
  uint32_t thread_index_in_simdgroup;
  uint32_t simdgroups_per_threadgroup;
  uint32_t dispatch_simdgroups_per_threadgroup;
  uint32_t threads_per_simdgroup;
  uint32_t thread_execution_width;
  uint32_t quadgroup_index_in_threadgroup;
  uint32_t thread_index_in_quadgroup;
  uint32_t quadgroups_per_threadgroup;
  uint32_t dispatch_quadgroups_per_threadgroup;
};

// Generated per kernel by translation.py: calls the kernel with buffer i bound
// to [[buffer(i)]] and the attributes bound by name, as Metal binds them.
void mh_launch(void* const* buffers, const struct mh_attrs* attrs);
extern const int mh_buffer_count;

// ---- services the compatibility header calls -------------------------------

// Report a problem that ends the run (never returns). `kind` is one word the
// Python side turns into a finding (findings.cpp lists them with their
// check); `line` is a line of the generated Metal source, or 0.
__attribute__((noreturn, format(printf, 3, 4))) void mh_fail(
    const char* kind, unsigned line, const char* fmt, ...);

// Report a problem after which the run goes on (the hardware's behaviour is
// defined, or the checker can go on safely): `kind` as for mh_fail, `line` a
// line of the generated Metal source (0: the current site), deduplicated by
// kind and line. The message says which threads (the caller may be a lane
// performing a collective for others).
__attribute__((format(printf, 3, 4))) void mh_report(const char* kind, unsigned line,
                                                     const char* fmt, ...);

// Block the calling thread until every live thread of its threadgroup has
// reached a threadgroup barrier; all of them must be at the same call site.
// `flags` are Metal's mem_flags: without mem_threadgroup the barrier orders
// no threadgroup memory (racecheck treats the accesses on both sides of it as
// one interval).
void mh_threadgroup_barrier(unsigned flags, unsigned line);

// A collective operation of the calling thread's simdgroup. Every lane calls
// it with the same `op` at the same `line` and a pointer to its own arguments.
// All lanes but the last to arrive block and get NULL back once the operation
// is done. The last one gets the 32 lanes' argument pointers (NULL for lanes
// that do not exist or have returned), performs the operation for everyone,
// then calls mh_simd_release(). With `all_lanes`, all 32 lanes must exist and
// be running (simdgroup matrix functions); otherwise the lanes that have
// returned from the kernel are not waited for (simd_sum, simdgroup_barrier:
// inactive lanes take no part on Apple GPUs).
void* const* mh_simd_collective(const char* op, unsigned line, void* args, int all_lanes);
void mh_simd_release(void);

// This thread's lane within its simdgroup.
uint32_t mh_lane(void);
// The lanes the calling thread's simdgroup has (fewer than 32 in a threadgroup
// whose size is not a multiple of 32): lanes past them do not exist, where
// lanes below them that take no part in a collective are inactive.
uint32_t mh_simd_lane_count(void);
// The calling thread's simdgroup in its threadgroup.
uint32_t mh_simdgroup_index(void);

// One `threadgroup` variable of the kernel: storage that every thread of the
// running threadgroup shares, fresh (poisoned, and uninitialized for
// initcheck) for each threadgroup, guarded against overruns, and counted
// against Metal's 32 KiB per threadgroup. `name` is the variable's name.
struct mh_tg_slot {
  void* data;
  size_t size;
  uint64_t generation;
};
void* mh_threadgroup_alloc(struct mh_tg_slot* slot, size_t size, unsigned line, const char* name);

// Per-simdgroup storage for the event objects of simdgroup_async_copy: valid
// until the threadgroup ends. Returns `size` zeroed bytes.
void* mh_simdgroup_scratch(size_t size);

// Count one simdgroup_async_copy issued (reported after the run, so a test can
// tell which copy path a kernel took).
void mh_count_async_copy(void);

// ---- access checking -------------------------------------------------------
// Every load and store the kernel's code makes reaches access_checks.cpp
// through clang's -fsanitize-coverage=trace-loads,trace-stores callbacks, with
// its return address (mapped to a source line by the Python side). These are
// for what that instrumentation cannot see or attribute.

// Loads and stores made between mh_site_push and mh_site_pop are attributed to
// `line` of the generated Metal source, or, when `line` is 0, to `pc` (a
// return address into the kernel's code): a collective's accesses are made by
// one lane on behalf of all, inside the compatibility layer.
void mh_site_push(unsigned line, const void* pc);
void mh_site_pop(void);

enum {
  MH_READ = 1,
  MH_WRITE = 2,
  // An atomic operation: checked for bounds and initialization, never a race.
  MH_ATOMIC = 4,
  // An async copy's destination, which the copy engine may write at any time
  // until the wait: a write for racecheck, and no longer initialized.
  MH_DMA = 8,
};
// Check an access the instrumentation does not see (`flags` from the enum
// above), attributed to `line` (or the current site when 0).
void mh_access(const void* p, size_t size, int flags, unsigned line);

// Instrumented loads and stores between these are not checked (an atomic
// operation's own implementation, already checked by mh_access).
void mh_untraced_begin(void);
void mh_untraced_end(void);

#ifdef __cplusplus
}
#endif

#endif  // METAL_HARNESS_RUNTIME_H
