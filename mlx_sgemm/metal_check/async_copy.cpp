// simdgroup_async_copy for the Metal CPU harness: the definitions of the
// undocumented AIR intrinsics a kernel declares (as Fast Matrix Multiply on an Apple GPU does):
//
//   thread _simdgroup_event_t* __metal_simdgroup_async_copy_2d(...)
//       __asm("air.simdgroup_async_copy_2d.p3i8.p1i8");
//   void __metal_wait_simdgroup_events(int, thread _simdgroup_event_t**)
//       __asm("air.wait_simdgroup_events");
//
// A translation unit of its own, linked into every runner: the kernel's
// declarations and these definitions meet only through the symbol names.
#include "metal_compat.h"

// A copy is a collective of the issuing simdgroup; it is
// carried out when the simdgroup waits on its event (the latest moment the
// hardware may finish it), and its destination is poisoned when it is issued,
// so reading the tile before the wait gives wrong results. For the checks
// (this file is not instrumented: it says what it touches through mh_access),
// the destination is written by the copy engine at issue (racecheck: another
// simdgroup touching it before the barrier is a race; initcheck: reading it
// before the wait reads nothing written) and at the wait, where the source
// is read (memcheck: a source tile reaching past its buffer). Both are
// attributed to the kernel's call of the intrinsic.
//
// Arguments of the 2-D device -> threadgroup copy, as far as they are known:
// (sizeof(T), alignof(T), dst, dst_elements_per_row, dst_element_stride,
// dst_tile (cols, rows), src, src_elements_per_row, src_element_stride,
// src_tile (cols, rows), offset_in_src_tile, clamp_mode). The dst tile is
// written; its elements inside the src tile are copied from src, the rest are
// filled with 0 (clamp_mode 0, clamp_to_zero) or with the nearest src-tile
// element (1, clamp_to_edge). Element strides other than 1 and a nonzero
// offset are not understood and fail at run time.
struct _simdgroup_event_t {
  ulong elem_size;
  threadgroup char* dst;
  ulong dst_epr, dst_cols, dst_rows;
  const device char* src;
  ulong src_epr, src_cols, src_rows;
  int clamp_mode;
  int pending;
};

namespace metal_harness {
struct async_copy_args {
  _simdgroup_event_t request;
  _simdgroup_event_t** result;
};
inline bool same_request(const _simdgroup_event_t& a, const _simdgroup_event_t& b) {
  return a.elem_size == b.elem_size && a.dst == b.dst && a.dst_epr == b.dst_epr &&
         a.dst_cols == b.dst_cols && a.dst_rows == b.dst_rows && a.src == b.src &&
         a.src_epr == b.src_epr && a.src_cols == b.src_cols && a.src_rows == b.src_rows &&
         a.clamp_mode == b.clamp_mode;
}
}  // namespace metal_harness

thread _simdgroup_event_t* __metal_simdgroup_async_copy_2d(
    ulong elem_size, ulong elem_align, threadgroup void* dst, ulong dst_epr, ulong dst_stride,
    ulong2 dst_tile, const device void* src, ulong src_epr, ulong src_stride, ulong2 src_tile,
    long2 offset, int clamp_mode) __asm("air.simdgroup_async_copy_2d.p3i8.p1i8");

thread _simdgroup_event_t* __metal_simdgroup_async_copy_2d(
    ulong elem_size, ulong elem_align, threadgroup void* dst, ulong dst_epr, ulong dst_stride,
    ulong2 dst_tile, const device void* src, ulong src_epr, ulong src_stride, ulong2 src_tile,
    long2 offset, int clamp_mode) {
  (void)elem_align;
  if (dst_stride != 1 || src_stride != 1 || offset.x != 0 || offset.y != 0 ||
      (clamp_mode != 0 && clamp_mode != 1))
    mh_fail("unsupported", 0,
            "simdgroup_async_copy_2d: element strides (%lu, %lu), offset (%ld, %ld) and "
            "clamp mode %d are not modelled (only strides 1, offset 0, clamp mode 0 or 1)",
            dst_stride, src_stride, offset.x, offset.y, clamp_mode);
  _simdgroup_event_t* result = nullptr;
  metal_harness::async_copy_args mine{
      {elem_size, (threadgroup char*)dst, dst_epr, dst_tile.x, dst_tile.y,
       (const device char*)src, src_epr, src_tile.x, src_tile.y, clamp_mode, 1},
      &result};
  void* const* lanes = mh_simd_collective("simdgroup_async_copy", 0, &mine, 1);
  if (lanes) {
    mh_site_push(0, __builtin_return_address(0));
    for (int l = 1; l < 32; ++l)
      if (!metal_harness::same_request(
              static_cast<metal_harness::async_copy_args*>(lanes[l])->request, mine.request))
        mh_fail("nonuniform", 0,
                "simdgroup_async_copy: lane %d asks for a different copy than lane 0", l);
    _simdgroup_event_t* event =
        static_cast<_simdgroup_event_t*>(mh_simdgroup_scratch(sizeof(_simdgroup_event_t)));
    *event = mine.request;
    mh_count_async_copy();
    // Until the wait, the destination holds nothing usable.
    for (ulong r = 0; r < event->dst_rows; ++r) {
      threadgroup char* row = event->dst + r * dst_epr * elem_size;
      mh_access((const void*)row, event->dst_cols * elem_size, MH_DMA, 0);
      __builtin_memset((char*)row, 0xff, event->dst_cols * elem_size);
    }
    for (int l = 0; l < 32; ++l)
      *static_cast<metal_harness::async_copy_args*>(lanes[l])->result = event;
    mh_site_pop();
    mh_simd_release();
  }
  return result;
}

namespace metal_harness {
inline void perform_copy(_simdgroup_event_t& e) {
  for (ulong r = 0; r < e.dst_rows; ++r) {
    for (ulong c = 0; c < e.dst_cols; ++c) {
      threadgroup char* to = e.dst + (r * e.dst_epr + c) * e.elem_size;
      mh_access((const void*)to, e.elem_size, MH_WRITE, 0);
      const bool inside = r < e.src_rows && c < e.src_cols;
      if (!inside && (e.clamp_mode == 0 || e.src_rows == 0 || e.src_cols == 0)) {
        __builtin_memset((char*)to, 0, e.elem_size);
        continue;
      }
      const ulong sr = r < e.src_rows ? r : e.src_rows - 1;
      const ulong sc = c < e.src_cols ? c : e.src_cols - 1;
      const device char* from = e.src + (sr * e.src_epr + sc) * e.elem_size;
      mh_access((const void*)from, e.elem_size, MH_READ, 0);
      __builtin_memcpy((char*)to, (const char*)from, e.elem_size);
    }
  }
  e.pending = 0;
}
struct wait_args {
  int count;
  _simdgroup_event_t** events;
};
}  // namespace metal_harness

void __metal_wait_simdgroup_events(int count, thread _simdgroup_event_t** events)
    __asm("air.wait_simdgroup_events");

void __metal_wait_simdgroup_events(int count, thread _simdgroup_event_t** events) {
  metal_harness::wait_args mine{count, events};
  void* const* lanes = mh_simd_collective("wait_simdgroup_events", 0, &mine, 1);
  if (!lanes) return;
  mh_site_push(0, __builtin_return_address(0));
  for (int i = 0; i < count; ++i) {
    _simdgroup_event_t* e = events[i];
    if (e == nullptr) mh_fail("unsupported", 0, "wait_simdgroup_events: event %d is null", i);
    if (e->pending) metal_harness::perform_copy(*e);
  }
  mh_site_pop();
  mh_simd_release();
}

