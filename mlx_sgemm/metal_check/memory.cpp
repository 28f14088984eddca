// Guarded memory for the kernel's buffers and threadgroup variables, and what
// happens when the kernel touches memory it may not.
//
// A region is laid out as
//
//   [guard: PROT_NONE] [slack] [data] [slack] [guard: PROT_NONE]
//
// with the data against one end of its pages (the end, or the start with
// align_end false) and the slack filled with a canary. access_checks.cpp
// reports every instrumented load or store into the slack or the guards
// before it happens, with its source line, and the run goes on: a read of the
// slack gets the canary (a NaN), a write there harms nothing. Only an access
// reaching a guard page faults, and ends the run. The canary, checked after
// the run, catches out-of-bounds writes no instrumented store made.
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime_internal.h"

namespace mh {
namespace {

// A float NaN too (a quiet NaN with a payload), so a read of the slack spoils
// a result even when multiplied by 0.
constexpr uint32_t kCanary = 0x7fc0dead;
// On each side: 64 MiB of PROT_NONE (address space only). Wide, so that a
// wild index lands in a region's own guard, where the access checks see it
// as out of bounds of that buffer, rather than in memory that is no buffer's.
constexpr size_t kGuardBytes = size_t(64) << 20;
constexpr size_t kSlackPages = 4;   // on each side: 16 KiB of accessible canary

constexpr int kMaxRegions = 256;
Region g_regions[kMaxRegions];
Region* g_sorted[kMaxRegions];  // by mapping address, for find_region
int g_region_count = 0;
size_t g_page_size = 0;

unsigned char canary_byte(const char* p) {
  return static_cast<unsigned char>(kCanary >> (8 * (reinterpret_cast<uintptr_t>(p) % 4)));
}

char* accessible_begin(const Region& r) { return r.map + kGuardBytes; }
char* accessible_end(const Region& r) { return r.map + r.map_size - kGuardBytes; }

}  // namespace

size_t page_size() {
  if (g_page_size == 0) g_page_size = size_t(sysconf(_SC_PAGESIZE));
  return g_page_size;
}

Region* new_region(const char* name, RegionKind kind, size_t size, bool align_end) {
  if (g_region_count == kMaxRegions) internal_error("too many buffers and threadgroup variables");
  Region* r = &g_regions[g_region_count];
  snprintf(r->name, sizeof r->name, "%s", name);
  r->kind = kind;
  const size_t page = page_size();
  const size_t guard = kGuardBytes, slack = kSlackPages * page;
  const size_t body = round_up(size == 0 ? 1 : size, page);
  r->map_size = body + 2 * (guard + slack);
  void* map = mmap(nullptr, r->map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (map == MAP_FAILED) internal_error("mmap failed for a buffer");
  r->map = static_cast<char*>(map);
  char* begin = accessible_begin(*r);
  mprotect(begin, body + 2 * slack, PROT_READ | PROT_WRITE);
  uint32_t* words = reinterpret_cast<uint32_t*>(begin);
  for (size_t i = 0; i < (body + 2 * slack) / 4; ++i) words[i] = kCanary;
  r->size = size;
  r->data = begin + slack + (align_end ? body - size : 0);
  // Keep g_sorted ordered by address (regions are few; an insertion).
  int i = g_region_count++;
  while (i > 0 && g_sorted[i - 1]->map > r->map) {
    g_sorted[i] = g_sorted[i - 1];
    --i;
  }
  g_sorted[i] = r;
  return r;
}

Region* find_region(uintptr_t address) {
  int lo = 0, hi = g_region_count;
  while (lo < hi) {  // the last region starting at or below address
    const int mid = (lo + hi) / 2;
    if (reinterpret_cast<uintptr_t>(g_sorted[mid]->map) <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return nullptr;
  Region* r = g_sorted[lo - 1];
  return address - reinterpret_cast<uintptr_t>(r->map) < r->map_size ? r : nullptr;
}

int region_count() { return g_region_count; }
Region* region(int i) { return &g_regions[i]; }

void make_read_only(Region& r) {
  mprotect(accessible_begin(r), size_t(accessible_end(r) - accessible_begin(r)), PROT_READ);
  r.read_only = true;
}

void check_canary(Region& r) {
  if (r.read_only) return;  // nothing can have written there
  char* lo = accessible_begin(r);
  char* hi = accessible_end(r);
  size_t before = 0, after = 0;  // the changed byte nearest the data on each side
  for (char* p = lo; p < r.data; ++p) {
    if (static_cast<unsigned char>(*p) != canary_byte(p)) {
      if (!before) before = size_t(r.data - p);
      *p = char(canary_byte(p));
    }
  }
  for (char* p = hi; p-- > r.data + r.size;) {
    if (static_cast<unsigned char>(*p) != canary_byte(p)) {
      after = size_t(p - (r.data + r.size)) + 1;
      *p = char(canary_byte(p));
    }
  }
  if ((before || after) && !r.overrun_reported)
    add_finding("memcheck", "out_of_bounds", Site{0, 0}, Site{0, 0}, int(&r - region(0)),
                "a write %zu bytes %s %s (%zu bytes), seen after the %s by the bytes it "
                "changed around it",
                before ? before : after, before ? "before the start of" : "past the end of",
                r.name, r.size, r.kind == THREADGROUP ? "threadgroup" : "dispatch");
}

// ---- faults ------------------------------------------------------------------

namespace {

char g_signal_stack[64 * 1024];

const void* faulting_pc(void* context) {
  const ucontext_t* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return reinterpret_cast<const void*>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return nullptr;
#endif
}

bool faulting_write(int sig, void* context) {
#if defined(__x86_64__)
  return sig == SIGSEGV && (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2);
#else
  (void)sig;
  (void)context;
  return false;  // not known: reported as an access
#endif
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const char* address = static_cast<const char*>(info->si_addr);
  // The instruction's own address: the line table maps pc + 1 (the Python
  // side looks up pc - 1, as for the return addresses of the access hooks).
  const Site site{relative_pc(faulting_pc(context)) + 1, 0};
  const char* access = faulting_write(sig, context) ? "write" : "access";
  if (sig == SIGILL || sig == SIGTRAP)
    fatal("out_of_bounds", site,
          "an index outside a fixed-size array (a threadgroup or thread-local array; clang "
          "-fsanitize=array-bounds trapped)");
  if (sig == SIGFPE) fatal("crash", site, "arithmetic exception (integer division by zero?)");
  if (reported_out_of_bounds(address)) abort_run();  // memcheck has said where and what
  if (Region* r = find_region(reinterpret_cast<uintptr_t>(address))) {
    if (address >= r->data && address < r->data + r->size && r->read_only)
      fatal("read_only", site, "a write to input buffer %s (byte %td of %zu)", r->name,
            address - r->data, r->size);
    if (address < r->data)
      fatal("out_of_bounds", site, "a %s %td bytes before the start of %s (%zu bytes)", access,
            r->data - address, r->name, r->size);
    fatal("out_of_bounds", site, "a %s %td bytes past the end of %s (%zu bytes)", access,
          address - (r->data + r->size), r->name, r->size);
  }
  const size_t page = page_size();
  for (int t = 0; t < g_fiber_capacity; ++t) {
    const char* guard = g_fibers[t].stack_map;
    if (guard && address >= guard && address < guard + page)
      fatal("crash", site, "stack overflow of a kernel thread (%zu KiB stacks)", kStackSize / 1024);
  }
  fatal("crash", site, "a %s of address %p, which is in no buffer (signal %d)", access,
        static_cast<const void*>(address), sig);
}

}  // namespace

void install_fault_handlers() {
  stack_t ss;
  ss.ss_sp = g_signal_stack;
  ss.ss_size = sizeof g_signal_stack;
  ss.ss_flags = 0;
  sigaltstack(&ss, nullptr);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  const int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE};
  for (int sig : signals) sigaction(sig, &sa, nullptr);
}

}  // namespace mh
