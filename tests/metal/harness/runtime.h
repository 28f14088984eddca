// The interface between a compiled Metal kernel (metal_compat.h + the kernel's
// translation unit) and the CPU runtime that executes it (runtime.cpp).
//
// Plain C types only: runtime.cpp is compiled without the Metal compatibility
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

// Generated per kernel by driver.py: calls the kernel with buffer i bound to
// [[buffer(i)]] and the attributes bound by name, as Metal binds them.
void mh_launch(void* const* buffers, const struct mh_attrs* attrs);
extern const int mh_buffer_count;

// ---- services the compatibility header calls -------------------------------

// Report a kernel error and end the run (never returns). `kind` is one word
// the Python driver turns into an exception type; `line` is a line of the
// generated Metal source, or 0.
__attribute__((noreturn, format(printf, 3, 4))) void mh_fail(
    const char* kind, unsigned line, const char* fmt, ...);

// Block the calling thread until every live thread of its threadgroup has
// reached a threadgroup barrier; all of them must be at the same call site.
void mh_threadgroup_barrier(unsigned flags, unsigned line);

// A collective operation of the calling thread's simdgroup. Every lane calls
// it with the same `op` at the same `line` and a pointer to its own arguments.
// All lanes but the last to arrive block and get NULL back once the operation
// is done. The last one gets the 32 lanes' argument pointers (NULL for lanes
// that do not exist), performs the operation for everyone, then calls
// mh_simd_release(). With `all_lanes`, all 32 lanes must exist and be running
// (simdgroup matrix functions); otherwise the lanes that have returned from
// the kernel are not waited for (simdgroup_barrier on Apple silicon).
void* const* mh_simd_collective(const char* op, unsigned line, void* args, int all_lanes);
void mh_simd_release(void);

// This thread's lane within its simdgroup.
uint32_t mh_lane(void);

// One `threadgroup` variable of the kernel: storage that every thread of the
// running threadgroup shares, fresh (poisoned) for each threadgroup, guarded
// against overruns, and counted against Metal's 32 KiB per threadgroup.
struct mh_tg_slot {
  void* data;
  size_t size;
  uint64_t generation;
};
void* mh_threadgroup_alloc(struct mh_tg_slot* slot, size_t size, unsigned line);

// Per-simdgroup storage for the event objects of simdgroup_async_copy: valid
// until the threadgroup ends. Returns `size` zeroed bytes.
void* mh_simdgroup_scratch(size_t size);

// Count one simdgroup_async_copy issued (reported after the run, so a test can
// tell which copy path a kernel took).
void mh_count_async_copy(void);

#ifdef __cplusplus
}
#endif

#endif  // METAL_HARNESS_RUNTIME_H
