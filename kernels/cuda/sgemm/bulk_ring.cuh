// The emulations' products kernels (int8_products.cu, half_products.cu): a
// block of one producer warpgroup and CONSUMERS consumer warpgroups, passing
// a ring of STAGES shared-memory stages of STAGE_BYTES each. One producer
// thread fills a stage with bulk copies (sgemm::bulk_copy) of tiles already in
// wgmma's 128-byte swizzle, its bytes counted on the stage's `full`
// transaction barrier; one thread of each consumer warpgroup hands it back on
// its `empty` barrier. Step i of the block uses stage i % STAGES, whose
// barriers are then in phase (i / STAGES) % 2.
#ifndef MLX_SGEMM_BULK_RING_CUH
#define MLX_SGEMM_BULK_RING_CUH

#include "tma.cuh"

namespace sgemm {

template <int STAGES, int STAGE_BYTES, int CONSUMERS>
struct BulkRing {
  static_assert(STAGES >= 2 && STAGES <= 8, "a ring of stages");
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  // setmaxnreg moves registers within the THREADS x ENTRY_REGISTERS the block
  // was given: the producer needs few, the consumers' accumulators many.
  static constexpr int ENTRY_REGISTERS = 65536 / THREADS / 8 * 8, PRODUCER_REGISTERS = 40;
  static constexpr int CONSUMER_REGISTERS =
      (THREADS * ENTRY_REGISTERS - 128 * PRODUCER_REGISTERS) / (128 * CONSUMERS) / 8 * 8;

  int8_t* stages;  // from the first 1024-byte boundary, the swizzle's alignment
  uint64_t* full;
  uint64_t* empty;

  // dynamic: the block's dynamic shared memory (its spec asks MLX for 1 KB
  // more than the ring, for the alignment); full, empty: STAGES barriers each,
  // in static shared memory. Every thread of the block makes the ring: thread
  // 0 initialises the barriers, then a block barrier.
  __device__ BulkRing(void* dynamic, uint64_t* full_, uint64_t* empty_)
      : stages(static_cast<int8_t*>(dynamic) + (1024 - shared_address(dynamic) % 1024) % 1024),
        full(full_), empty(empty_) {
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbarrier_init(&full[s], 1);
        mbarrier_init(&empty[s], CONSUMERS);
      }
      mbarrier_init_fence();
    }
    __syncthreads();
  }

  // The producer, step i: once the consumers have handed back step i -
  // STAGES's stage, announces its STAGE_BYTES; returns the stage to copy into
  // (the copies count their bytes on landed(i)).
  __device__ int8_t* produce(int i) const {
    wait_free(i);
    announce(i, STAGE_BYTES);
    return stage(i);
  }
  // produce() in two steps, for a producer that also writes part of a stage
  // with plain stores (half_wgmma's operands the TMA cannot copy): every
  // writer waits for the stage, writes, fences and meets the others; then one
  // thread announces the bytes the TMA will add, which is the stage's one
  // arrival (so the writes are published with it).
  __device__ void wait_free(int i) const {
    if (i >= STAGES) mbarrier_wait(&empty[i % STAGES], (i / STAGES + 1) % 2);
  }
  __device__ void announce(int i, uint32_t bytes) const { mbarrier_arrive_expect_bytes(&full[i % STAGES], bytes); }
  __device__ int8_t* stage(int i) const { return stages + (i % STAGES) * STAGE_BYTES; }
  __device__ uint64_t* landed(int i) const { return &full[i % STAGES]; }

  // A consumer, step i: waits for its bytes; returns its stage.
  __device__ const int8_t* consume(int i) const {
    mbarrier_wait(&full[i % STAGES], (i / STAGES) % 2);
    return stages + (i % STAGES) * STAGE_BYTES;
  }
  // One thread of each consumer warpgroup: step i's stage is free again.
  __device__ void release(int i) const { mbarrier_arrive(&empty[i % STAGES]); }
};

}  // namespace sgemm

#endif  // MLX_SGEMM_BULK_RING_CUH
