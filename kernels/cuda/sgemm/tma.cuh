// The tensor memory accelerator (TMA, sm_90): tensor maps made per block, box copies
// into shared memory, and the transaction barriers (mbarrier) that say they have landed.
//
// One thread asks for a whole box of a 2-D array; the TMA copies it into
// shared memory (here in wgmma's 128-byte swizzle, zeros outside the array)
// and counts its bytes on a transaction barrier (mbarrier) there; a thread
// that waits on the barrier then sees them. Against cp.async: no per-thread
// copies (tile_wgmma's producer issued ~500 instructions a k-tile for them),
// and the L2 is asked for whole boxes (docs/performance-log.md, "tile_wgmma:
// A and B by TMA"). The copy needs a 128-byte descriptor, the tensor map,
// that the CUDA driver makes (cuTensorMapEncodeTiled): mlx_sgemm/tensormap.py
// makes one per shape with a stand-in address and hands it over in `params`
// (at P_TENSOR_MAPS, params.cuh; MLX passes arrays, whose addresses Python
// does not see); each block writes its operand's address in (in shared
// memory) and copies the map to a global slot of its own, where the TMA reads it.
#ifndef MLX_SGEMM_TMA_CUH
#define MLX_SGEMM_TMA_CUH

#include "params.cuh"

namespace sgemm {

__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// A transaction barrier that completes a phase when `arrivals` threads have
// arrived and every byte announced has landed.
__device__ inline void mbarrier_init(uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(shared_address(bar)), "r"(arrivals));
}
// Makes barrier initialisations visible to the TMA (then a block barrier).
__device__ inline void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Arrive, announcing `bytes` more to come by TMA in the current phase.
__device__ inline void mbarrier_arrive_expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
               :: "r"(shared_address(bar)), "r"(bytes) : "memory");
}
// Arrive without announcing bytes: a consumer handing a stage back.
__device__ inline void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(shared_address(bar)) : "memory");
}
// Wait for the phase of parity `parity` to complete (phases alternate 0, 1,
// 0, ...: the n-th use of a stage of a ring waits with parity n % 2).
__device__ inline void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n"
      :: "r"(shared_address(bar)), "r"(parity) : "memory");
}

// Whether `params` carries a tensor map at `words` (the host writes zeros
// where it made none: no driver, or rows not 16-byte aligned). A map's first
// word is its (stand-in) address, never 0.
__device__ inline bool has_tensor_map(const int32_t* words) { return (words[0] | words[1]) != 0; }

// Warp-wide (all 32 lanes): the map at `words` with `address` written in,
// copied to the 128-byte global slot `slot` through the 128-byte aligned
// shared buffer `scratch` (one for each map made at once), released to the
// GPU. The thread that copies by it acquires it (acquire_tensor_map) after a
// block barrier with this warp. A block makes its two maps in two warps at
// once: each map is a chain of waits on global memory (the words in, the slot
// out, its fence), paid before the block's first copy.
__device__ inline void publish_tensor_map(void* slot, uint4* scratch, const int32_t* words, const void* address) {
  const int lane = threadIdx.x % 32;
  if (lane < 8) scratch[lane] = reinterpret_cast<const uint4*>(words)[lane];
  __syncwarp();
  if (lane == 0) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;\n"
                 :: "r"(shared_address(scratch)), "l"(address) : "memory");
  }
  __syncwarp();
  asm volatile(
      "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;\n"
      :: "l"(slot), "r"(shared_address(scratch)) : "memory");
}

// The thread that copies by the map in `slot`, after a block barrier with the
// warp that published it: sees the map as written, and has the TMA fetch it
// now rather than at the first copy.
__device__ inline void acquire_tensor_map(const void* slot) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" :: "l"(slot) : "memory");
  asm volatile("prefetch.tensormap [%0];\n" :: "l"(slot) : "memory");
}

// A block's two tensor maps, A's and B's, in its two slots of the `maps`
// output: a map must be 64-byte aligned, which MLX does not promise for an
// output, so the slots start at the output's first 128-byte boundary (the
// host adds room). Warp 0 publishes A's map and warp 1 B's, at once (each a
// chain of waits on global memory); the thread that copies acquires both
// after a block barrier with those warps. `maps` null (a kernel built
// without tensor maps): nothing to publish or acquire.
struct BlockTensorMaps {
  float* a;
  float* b;

  __device__ explicit BlockTensorMaps(float* maps)
      : a(maps ? reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(maps) + 127) / 128 * 128) +
                     2 * TENSOR_MAP_WORDS * blockIdx.x
               : nullptr),
        b(a ? a + TENSOR_MAP_WORDS : nullptr) {}

  // Each map where its operand goes by TMA (a_tma, b_tma): the words from
  // params with the operand's address written in; `scratch`: 128-byte
  // aligned shared memory, 8 uint4 a map.
  __device__ void publish(uint4 (&scratch)[2][8], bool a_tma, const int32_t* a_words, const void* a_address,
                          bool b_tma, const int32_t* b_words, const void* b_address) const {
    if (threadIdx.x / 32 == 0 && a_tma) publish_tensor_map(a, scratch[0], a_words, a_address);
    if (threadIdx.x / 32 == 1 && b_tma) publish_tensor_map(b, scratch[1], b_words, b_address);
  }

  // By the copying thread, after the block barrier.
  __device__ void acquire(bool a_tma, bool b_tma) const {
    if (a_tma) acquire_tensor_map(a);
    if (b_tma) acquire_tensor_map(b);
  }
};

// Copy the box at (x, y) (x the map's fastest dimension) of the map at `map`
// into shared memory at `smem` (1024-byte aligned for the 128-byte swizzle),
// its bytes counted on `bar`.
__device__ inline void tma_load_2d(void* smem, const void* map, int x, int y, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      :: "r"(shared_address(smem)), "l"(map), "r"(x), "r"(y), "r"(shared_address(bar)) : "memory");
}

// Copy `bytes` contiguous bytes (a multiple of 16, both ends 16-byte aligned)
// from global memory into shared memory by the TMA, counted on `bar`: no
// tensor map, for data already laid out as shared memory wants it (the INT8
// emulation's residue tiles, sgemm/int8_tiles.cuh).
__device__ inline void bulk_copy(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
      :: "r"(shared_address(smem)), "l"(gmem), "r"(bytes), "r"(shared_address(bar)) : "memory");
}

}  // namespace sgemm

#endif  // MLX_SGEMM_TMA_CUH
