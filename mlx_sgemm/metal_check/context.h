// Switching the CPU between the scheduler and the kernel's threads (fibers).
//
// On x86-64 a switch saves and restores the callee-saved registers and the
// stack pointer (context.cpp), nothing else: the threads share the signal
// mask, so there is no system call, where glibc's swapcontext makes one on
// every switch (most of a run's time went there). Elsewhere, ucontext.
#ifndef METAL_HARNESS_CONTEXT_H
#define METAL_HARNESS_CONTEXT_H

#include <stddef.h>
#include <ucontext.h>

namespace mh {

#if defined(__x86_64__)
struct Context {
  void* sp;  // where the saved registers are, on the context's own stack
};
#else
struct Context {
  ucontext_t uc;
};
#endif

// Make `c` start `entry` (which must never return) on the given stack.
void start_context(Context& c, char* stack, size_t size, void (*entry)());
// Save the running context in `from` and run `to`.
void switch_context(Context& from, Context& to);

}  // namespace mh

#endif  // METAL_HARNESS_CONTEXT_H
