// Context switches for the fibers (context.h).
#include "context.h"

#include <stdint.h>

namespace mh {

#if defined(__x86_64__)

// mh_context_switch(save, load): push the System V callee-saved registers,
// store the stack pointer in *save, load `load` as the stack pointer, pop the
// registers saved there and return into that context.
// mh_context_start: a new context's first return lands here, with the entry
// function in r12 (laid out by start_context) and the stack 16-byte aligned.
extern "C" void mh_context_switch(void** save, void* load);
asm(R"(
  .text
  .globl mh_context_switch
  .type mh_context_switch, @function
mh_context_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size mh_context_switch, .-mh_context_switch

  .globl mh_context_start
  .type mh_context_start, @function
mh_context_start:
  callq *%r12
  ud2
  .size mh_context_start, .-mh_context_start
)");
extern "C" void mh_context_start();

void start_context(Context& c, char* stack, size_t size, void (*entry)()) {
  // From the stack's 16-byte aligned top T down: a pad, the address
  // mh_context_switch returns to (mh_context_start, entered with the stack
  // at T - 16 as a call requires), then rbp, rbx, r12 (= entry), r13..r15.
  const uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
  void** slot = reinterpret_cast<void**>(top - 72);
  for (int i = 0; i < 9; ++i) slot[i] = nullptr;
  slot[3] = reinterpret_cast<void*>(entry);  // r12
  slot[6] = reinterpret_cast<void*>(&mh_context_start);
  c.sp = slot;
}

void switch_context(Context& from, Context& to) { mh_context_switch(&from.sp, to.sp); }

#else

void start_context(Context& c, char* stack, size_t size, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}

void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }

#endif

}  // namespace mh
