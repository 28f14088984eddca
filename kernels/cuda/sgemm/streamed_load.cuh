// Loads of an operand that a kernel reads once, straight from device memory:
// half_gemv's weights (kernels/cuda/half_gemv.cu), which no other block reads.
#ifndef MLX_SGEMM_STREAMED_LOAD_CUH
#define MLX_SGEMM_STREAMED_LOAD_CUH

namespace sgemm {

// One 4-, 8- or 16-byte load through the read-only path, not kept in L1
// (nothing reads it again), with L2 told to fetch the 256 bytes around it
// (L2::256B): the lanes of the block's other warps read the neighbouring
// bytes of the same lines a moment later, so each request from memory brings
// several loads' bytes, and a kernel bound by the bytes it keeps in flight
// keeps more of them in flight. (half_gemv read W at 66-70% of an H200's
// bandwidth with plain loads: docs/performance-log.md, "half_gemv: W's loads
// ask L2 for 256 bytes".)
template <typename V>
__device__ inline V load_streamed(const void* p) {
  V v;
  if constexpr (sizeof(V) == 16) {
    uint32_t* w = reinterpret_cast<uint32_t*>(&v);
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "l"(p));
  } else if constexpr (sizeof(V) == 8) {
    uint32_t* w = reinterpret_cast<uint32_t*>(&v);
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  } else {
    static_assert(sizeof(V) == 4, "a load of 4, 8 or 16 bytes");
    asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(*reinterpret_cast<uint32_t*>(&v)) : "l"(p));
  }
  return v;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_STREAMED_LOAD_CUH
