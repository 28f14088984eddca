// simdgroup_async_copy: the AIR intrinsics behind it, declared at namespace
// scope, and copy_tile, one 2-D async copy of a tile where the operand allows.
#ifndef MLX_SGEMM_METAL_ASYNC_COPY_H
#define MLX_SGEMM_METAL_ASYNC_COPY_H

#include "load.h"
#include "operand.h"

// The undocumented AIR intrinsics behind simdgroup_async_copy, declared as Fast
// Matrix Multiply on an Apple GPU does (at namespace scope: MLX puts the body
// inside the kernel). Only the stages that use them include this header: Apple's
// compiler may refuse __asm names (reported for macOS 26), and the other stages
// must not depend on that.
//
// (sizeof(T), alignof(T), dst, dst_elements_per_row, 1, dst_tile (cols, rows),
//  src, src_elements_per_row, 1, src_tile (cols, rows), long2(0), clamp_mode):
// the src tile is copied to the top left of the dst tile, and the rest of the
// dst tile is filled with zeros (clamp_mode 0). The copy is a collective of the
// calling simdgroup and is complete once the simdgroup has waited on its event.
struct _simdgroup_event_t;
thread _simdgroup_event_t* __metal_simdgroup_async_copy_2d(
    ulong, ulong, threadgroup void*, ulong, ulong, ulong2,
    const device void*, ulong, ulong, ulong2, long2, int)
    __asm("air.simdgroup_async_copy_2d.p3i8.p1i8");
void __metal_wait_simdgroup_events(int, thread _simdgroup_event_t**)
    __asm("air.wait_simdgroup_events");

namespace sgemm {

// Can x be fetched with one 2-D async copy? It needs rows of contiguous
// elements (cs == 1) in device memory, one after another at a positive row
// stride; we also ask for rows that start 16 bytes apart (4 floats, 8 halves).
// Other operands are copied element by element (copy_tile).
template <typename P>
inline bool async_copyable(Operand<P>) {
  return false;  // `constant` memory: the copy reads device memory only
}
template <typename T>
inline bool async_copyable(Operand<const device T*> x) {
  return x.cs == 1 && x.rs >= x.cols && (x.rs * int64_t(sizeof(T))) % 16 == 0;
}

// Fill a threadgroup tile with the ROWS x COLS block of x at (r0, c0), zeros
// outside x. With `async` (async_copyable(x), the same in all threads)
// simdgroup 0 issues one async copy and stores its event at *event (Fast Matrix
// Multiply on an Apple GPU: one simdgroup loading is faster than all of them); the copy is complete
// once simdgroup 0 has waited on it. Otherwise all threads copy elements
// (load_tile) before returning. Returns the number of events issued (0 or 1).
//
// The copy moves bytes, so it needs a tile of x's own element type T: float32
// operands into float32 tiles, half (bfloat) ones into half (bfloat) tiles
// (TileElement, simdgroup.h). A tile of another type than its operand's (a
// mixed pair's float32 tiles) and `constant` operands take the element copy,
// which converts as it loads.
template <int COLS, int ROWS, int LD, typename T>
inline int copy_tile(threadgroup T (&tile)[ROWS][LD], Operand<const device T*> x, int r0,
                     int c0, bool async, thread _simdgroup_event_t** event, int sg, int tid,
                     int threads) {
  if (!async) {
    load_tile<COLS>(tile, x, r0, c0, tid, threads);
    return 0;
  }
  if (sg == 0) {
    const int rows = min(ROWS, x.rows - r0), cols = min(COLS, x.cols - c0);
    *event = __metal_simdgroup_async_copy_2d(
        sizeof(T), alignof(T), (threadgroup void*)&tile[0][0], ulong(LD), 1,
        ulong2(COLS, ROWS), (const device void*)(x.p + r0 * x.rs + c0), ulong(x.rs), 1,
        ulong2(cols, rows), long2(0), 0);
  }
  return 1;
}
template <int COLS, int ROWS, int LD, typename T, typename P>
inline int copy_tile(threadgroup T (&tile)[ROWS][LD], Operand<P> x, int r0, int c0, bool,
                     thread _simdgroup_event_t**, int, int tid, int threads) {
  load_tile<COLS>(tile, x, r0, c0, tid, threads);
  return 0;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_METAL_ASYNC_COPY_H
