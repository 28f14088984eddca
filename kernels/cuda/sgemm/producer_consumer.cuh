// What the warpgroups of a warp-specialized block (a producer, consumers) pass work
// with: named barriers between them, and registers handed from one to the other (setmaxnreg).
#ifndef MLX_SGEMM_PRODUCER_CONSUMER_CUH
#define MLX_SGEMM_PRODUCER_CONSUMER_CUH

namespace sgemm {

// Named barriers (ids 1..15; 0 is __syncthreads) between the warps of one
// block: `arrive` counts this warp in and goes on, `sync` counts it in and
// waits until `threads` threads have. A producer arrives, consumers sync.
__device__ inline void barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
__device__ inline void barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
// barrier_sync that also returns whether `value` is true in every thread
// counted (bar.red.and).
__device__ inline bool barrier_sync_and(int id, int threads, bool value) {
  int all;
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %3, 0;\nbar.red.and.pred p, %1, %2, p;\nselp.b32 %0, 1, 0, p;\n}\n"
               : "=r"(all) : "r"(id), "r"(threads), "r"(static_cast<int>(value)) : "memory");
  return all != 0;
}

// Hand registers between the warpgroups of a block (sm_90a): a warpgroup that
// needs few gives some back, one that needs many takes them. Takes effect
// only under a register cap at entry (__launch_bounds__, see SGEMM_MIN_BLOCKS).
template <int REGS>
__device__ inline void registers_decrease() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(REGS));
}
template <int REGS>
__device__ inline void registers_increase() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(REGS));
}

}  // namespace sgemm

#endif  // MLX_SGEMM_PRODUCER_CONSUMER_CUH
