// Hopper warpgroup MMA (wgmma, sm_90a): TF32 products of a 64-row tile by an N-wide
// one, their shared-memory descriptors, and the fences and waits around them.
//
// A warpgroup (4 consecutive warps, 128 threads) multiplies a 64 x 8 TF32 tile
// held in its registers (or in shared memory) by an 8 x N tile that the tensor
// cores read straight from shared memory, asynchronously: the threads issue a
// batch of products, may do other work, then wait for it. One m64n128k8
// product is 16 times the work of an mma.sync m16n8k8 for one issue slot,
// which is what lifts the tensor cores off the instruction-issue limit of the
// mma.sync kernels (docs/performance-log.md, "mma.sync kernels are bound by
// instruction issue").
#ifndef MLX_SGEMM_WGMMA_CUH
#define MLX_SGEMM_WGMMA_CUH

namespace sgemm {

// The 64-bit descriptor of a SwizzledTile's k8 slice (or a ResidueTile's k32
// slice: the same 32 bytes of each row) starting at `p`: its
// shared-memory address, LBO and SBO (each in 16-byte units), the swizzle.
template <typename Tile>
__device__ inline uint64_t wgmma_descriptor(const void* p) {
  const uint64_t address = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return ((address & 0x3ffff) >> 4) | (uint64_t((Tile::LBO & 0x3ffff) >> 4) << 16) |
         (uint64_t((Tile::SBO & 0x3ffff) >> 4) << 32) | (Tile::LAYOUT << 62);
}

// Shared memory written by ordinary stores (or cp.async) is read by wgmma
// through the "async proxy": each writing thread fences before the barrier
// that publishes the tile.
__device__ inline void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Registers that a wgmma reads or accumulates into must be written before this
// fence; the products' results may be read only after wgmma_wait.
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>  // until at most N committed batches are still running
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}

// d (64 x N, float32) = a (64 x 8, TF32) * b (8 x N, TF32 in shared memory,
// K-major, described by b_desc) + (accumulate ? d : 0), for the widths
// tile_wgmma uses (N = its BM), a from registers. Its fragments are those of
// mma.sync m16n8k8 (see mma_m16n8k8_tf32), warp w of the warpgroup holding
// rows 16w..16w+15: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
// d[4j + e] is row g + 8 (e / 2), column 8j + 2t + e % 2.
// The accumulators as asm operands: "+f" for float32 (TF32 products), "+r"
// for int32 (INT8 products); SGEMM_D is the constraint in use.
#define SGEMM_D8(i) SGEMM_D(d[i]), SGEMM_D(d[i + 1]), SGEMM_D(d[i + 2]), SGEMM_D(d[i + 3]), \
                    SGEMM_D(d[i + 4]), SGEMM_D(d[i + 5]), SGEMM_D(d[i + 6]), SGEMM_D(d[i + 7])
#define SGEMM_D16 SGEMM_D8(0), SGEMM_D8(8)
#define SGEMM_D32 SGEMM_D16, SGEMM_D8(16), SGEMM_D8(24)
#define SGEMM_D64 SGEMM_D32, SGEMM_D8(32), SGEMM_D8(40), SGEMM_D8(48), SGEMM_D8(56)
#define SGEMM_D96 SGEMM_D64, SGEMM_D8(64), SGEMM_D8(72), SGEMM_D8(80), SGEMM_D8(88)
#define SGEMM_D128 SGEMM_D64, SGEMM_D8(64), SGEMM_D8(72), SGEMM_D8(80), SGEMM_D8(88), \
                   SGEMM_D8(96), SGEMM_D8(104), SGEMM_D8(112), SGEMM_D8(120)
#define SGEMM_D(x) "+f"(x)
// The N / 2 accumulators' operand numbers, as the instruction lists them.
#define SGEMM_ACC16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define SGEMM_ACC32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define SGEMM_ACC64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define SGEMM_ACC96 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define SGEMM_ACC128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// One wgmma: N, the operand number of `accumulate`, the accumulators, and
// the a and b operands.
#define SGEMM_WGMMA(N, ACCUMULATE, D, AB)                                        \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " ACCUMULATE ", 0;\n"                     \
  "wgmma.mma_async.sync.aligned.m64n" N "k8.f32.tf32.tf32 " D ", " AB ", p, 1, 1;\n}\n"
#define SGEMM_RS_INPUTS "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(int(accumulate))
#define SGEMM_SS_INPUTS "l"(a_desc), "l"(b_desc), "r"(int(accumulate))
template <int N>
__device__ inline void wgmma_tf32(
    float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b_desc, bool accumulate) {
  static_assert(N == 32 || N == 64 || N == 128 || N == 256, "m64n32k8 ... m64n256k8");
  if constexpr (N == 256) {
    asm volatile(SGEMM_WGMMA("256", "%133", SGEMM_ACC128, "{%128, %129, %130, %131}, %132")
                 : SGEMM_D128 : SGEMM_RS_INPUTS);
  } else if constexpr (N == 128) {
    asm volatile(SGEMM_WGMMA("128", "%69", SGEMM_ACC64, "{%64, %65, %66, %67}, %68")
                 : SGEMM_D64 : SGEMM_RS_INPUTS);
  } else if constexpr (N == 64) {
    asm volatile(SGEMM_WGMMA("64", "%37", SGEMM_ACC32, "{%32, %33, %34, %35}, %36")
                 : SGEMM_D32 : SGEMM_RS_INPUTS);
  } else {
    asm volatile(SGEMM_WGMMA("32", "%21", SGEMM_ACC16, "{%16, %17, %18, %19}, %20")
                 : SGEMM_D16 : SGEMM_RS_INPUTS);
  }
}

// d (64 x N, float32) = a (64 x 16) * b (16 x N) + (accumulate ? d : 0), both
// operands float16 or both bfloat16 (T: __half or __nv_bfloat16), both in
// shared memory in the 128-byte swizzle, described by a_desc and b_desc. 16-bit
// operands may lie either way: K-major (k16 is 32 bytes of a line, as an INT8
// product's k32: the same ResidueTile slices), or with TRANS_A / TRANS_B
// MN-major (a line's 64 consecutive elements in a 128-byte row, one row a k:
// sgemm::HalfPanels). d's layout is the TF32 products'. The widths are those of
// the float16 split's products (128, 192, 256) and of half_wgmma's consumer
// tiles (64 up).
template <typename T>
struct HalfMma;  // the PTX name of a 16-bit element type
template <>
struct HalfMma<__half> {
  static constexpr bool BF16 = false;
};
template <>
struct HalfMma<__nv_bfloat16> {
  static constexpr bool BF16 = true;
};
#define SGEMM_HALF_INPUTS SGEMM_SS_INPUTS, "n"(TRANS_A), "n"(TRANS_B)
// One half wgmma: N, the element type's name, the accumulators, the operand
// numbers of the descriptors, of `accumulate` and of the transposes.
#define SGEMM_WGMMA_HALF(N, TYPE, D, DESCS, P, TRANS)                                  \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                     \
  "wgmma.mma_async.sync.aligned.m64n" N "k16.f32." TYPE "." TYPE " " D ", " DESCS ", p, 1, 1, " TRANS ";\n}\n"
#define SGEMM_HALF_CASES(TYPE)                                                                          \
  if constexpr (N == 256) {                                                                            \
    asm volatile(SGEMM_WGMMA_HALF("256", TYPE, SGEMM_ACC128, "%128, %129", "%130", "%131, %132")        \
                 : SGEMM_D128 : SGEMM_HALF_INPUTS);                                                   \
  } else if constexpr (N == 192) {                                                                     \
    asm volatile(SGEMM_WGMMA_HALF("192", TYPE, SGEMM_ACC96, "%96, %97", "%98", "%99, %100")             \
                 : SGEMM_D96 : SGEMM_HALF_INPUTS);                                                    \
  } else if constexpr (N == 128) {                                                                     \
    asm volatile(SGEMM_WGMMA_HALF("128", TYPE, SGEMM_ACC64, "%64, %65", "%66", "%67, %68")              \
                 : SGEMM_D64 : SGEMM_HALF_INPUTS);                                                    \
  } else {                                                                                             \
    asm volatile(SGEMM_WGMMA_HALF("64", TYPE, SGEMM_ACC32, "%32, %33", "%34", "%35, %36")               \
                 : SGEMM_D32 : SGEMM_HALF_INPUTS);                                                    \
  }
template <typename T, int N, int TRANS_A = 0, int TRANS_B = 0>
__device__ inline void wgmma_half_ss(float (&d)[N / 2], uint64_t a_desc, uint64_t b_desc, bool accumulate) {
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "m64n64k16 ... m64n256k16");
  if constexpr (HalfMma<T>::BF16) {
    SGEMM_HALF_CASES("bf16")
  } else {
    SGEMM_HALF_CASES("f16")
  }
}
#undef SGEMM_HALF_CASES
#undef SGEMM_WGMMA_HALF
#undef SGEMM_HALF_INPUTS

// d (64 x N, int32) += a (64 x 32, int8) * b (32 x N, int8), both operands in
// shared memory, K-major (the only layout INT8 wgmma takes), described by
// a_desc and b_desc (ResidueTile slices). Exact: the int32 sum wraps only past
// 2^31, which the emulation's bound on K rules out. d's layout is the TF32
// products' (d[4j + e]: row g + 8 (e / 2), column 8j + 2t + e % 2 of the warp's
// 16 rows). N = 256: one product a k32 step for a consumer warpgroup's whole
// 64 x 256 tile.
#undef SGEMM_D
#define SGEMM_D(x) "+r"(x)
__device__ inline void wgmma_s8_ss_n256(int32_t (&d)[128], uint64_t a_desc, uint64_t b_desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 " SGEMM_ACC128 ", %128, %129, 1;\n"
      : SGEMM_D128 : "l"(a_desc), "l"(b_desc));
}
#undef SGEMM_RS_INPUTS
#undef SGEMM_SS_INPUTS
#undef SGEMM_WGMMA
#undef SGEMM_ACC16
#undef SGEMM_ACC32
#undef SGEMM_ACC64
#undef SGEMM_ACC96
#undef SGEMM_ACC128
#undef SGEMM_D16
#undef SGEMM_D32
#undef SGEMM_D64
#undef SGEMM_D96
#undef SGEMM_D128
#undef SGEMM_D8
#undef SGEMM_D

}  // namespace sgemm

#endif  // MLX_SGEMM_WGMMA_CUH
