// What the checks found, for the Python side (mlx_sgemm/metal_check/findings.py).
//
// A finding is kept once per (kind, sites, key) and counted when it repeats:
// a race in an inner loop is one finding with a count, not a million lines.
// Past kMaxFindings distinct ones, the rest are counted (distinct, and times).
// They are written to stderr when the run ends, one line each:
//
//   METAL_HARNESS_FINDING <check>\t<kind>\t<pc>\t<line>\t<pc2>\t<line2>\t<count>\t<message>
//
// pc and pc2 (hex, relative to the executable's ELF header; 0: none) and line
// and line2 (of the generated Metal source; 0: none) say where the access or
// the two accesses were. A line the message names is written "@line:<n>@",
// for the Python side to name by the user's file. A run that cannot go on after a finding (a deadlock, a
// fault) ends with "METAL_HARNESS_ABORTED" and exit status 3.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime_internal.h"

extern "C" char __ehdr_start;  // the linker's symbol for the ELF header

namespace mh {
namespace {

constexpr int kMaxFindings = 2048;
constexpr int kTableSize = 4096;  // open addressing over findings, a power of 2

struct Finding {
  const char* check;
  const char* kind;
  Site first, second;
  int key;
  uint64_t count;
  char message[kMessageSize];
};

Finding g_findings[kMaxFindings];
int g_count = 0;
int g_table[kTableSize];  // index + 1 into g_findings, 0: empty
// Findings beyond kMaxFindings are not kept, but counted: the distinct ones
// (by their hash, remembered in a table of their own, up to its size) and
// every time one happens. A repeat is not a new finding.
constexpr int kDroppedTableSize = 1 << 14;
uint64_t g_dropped_hashes[kDroppedTableSize];  // 0: empty
uint64_t g_dropped = 0;  // distinct
uint64_t g_dropped_times = 0;

void count_dropped(uint64_t h) {
  ++g_dropped_times;
  h |= 1;  // never 0, the empty slot
  for (int probe = 0; probe < kDroppedTableSize; ++probe) {
    uint64_t& slot = g_dropped_hashes[(h + uint64_t(probe)) & (kDroppedTableSize - 1)];
    if (slot == h) return;
    if (slot == 0) {
      slot = h;
      ++g_dropped;
      return;
    }
  }
  ++g_dropped;  // the table is full: counted as new
}

uint64_t hash_of(const char* kind, Site a, Site b, int key) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  mix(reinterpret_cast<uintptr_t>(kind));
  mix(a.pc);
  mix(a.line);
  mix(b.pc);
  mix(b.line);
  mix(uint64_t(int64_t(key)));
  return h;
}

bool same(const Finding& f, const char* kind, Site a, Site b, int key) {
  return f.kind == kind && f.first.pc == a.pc && f.first.line == a.line &&
         f.second.pc == b.pc && f.second.line == b.line && f.key == key;
}

// The finding's slot, or null when the table is full (it is then dropped).
Finding* slot_for(const char* check, const char* kind, Site a, Site b, int key, bool* fresh) {
  uint64_t h = hash_of(kind, a, b, key);
  for (int probe = 0; probe < kTableSize; ++probe) {
    int& entry = g_table[(h + uint64_t(probe)) & (kTableSize - 1)];
    if (entry == 0) {
      if (g_count == kMaxFindings) return nullptr;
      Finding& f = g_findings[g_count++];
      f.check = check;
      f.kind = kind;
      f.first = a;
      f.second = b;
      f.key = key;
      f.count = 0;
      f.message[0] = 0;
      entry = g_count;
      *fresh = true;
      return &f;
    }
    Finding& f = g_findings[entry - 1];
    if (same(f, kind, a, b, key)) {
      *fresh = false;
      return &f;
    }
  }
  return nullptr;
}

// Tabs and newlines would break the line format.
void sanitize(char* s) {
  for (; *s; ++s)
    if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' ';
}

}  // namespace

// The check each kind of finding belongs to; "error" for what no check owns
// (a crash, a timeout, something the harness does not model).
const char* check_of(const char* kind) {
  static const char* const table[][2] = {
      {"out_of_bounds", "memcheck"}, {"read_only", "memcheck"},
      {"divergence", "synccheck"},   {"deadlock", "synccheck"},
      {"nonuniform", "synccheck"},   {"resources", "launch"},
      {"inactive_lanes", "synccheck"}, {"inactive_lane_read", "synccheck"},
  };
  for (const auto& row : table)
    if (strcmp(row[0], kind) == 0) return row[1];
  return "error";
}

uintptr_t relative_pc(const void* pc) {
  return pc ? reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(&__ehdr_start) : 0;
}

char* new_finding(const char* check, const char* kind, Site first, Site second, int key) {
  bool fresh = false;
  Finding* f = slot_for(check, kind, first, second, key, &fresh);
  if (!f) {
    count_dropped(hash_of(kind, first, second, key));
    return nullptr;
  }
  ++f->count;
  return fresh ? f->message : nullptr;
}

void add_finding(const char* check, const char* kind, Site first, Site second, int key,
                 const char* fmt, ...) {
  char* message = new_finding(check, kind, first, second, key);
  if (!message) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, kMessageSize, fmt, ap);
  va_end(ap);
}

void write_findings() {
  for (int i = 0; i < g_count; ++i) {
    Finding& f = g_findings[i];
    sanitize(f.message);
    fprintf(stderr, "METAL_HARNESS_FINDING %s\t%s\t%lx\t%u\t%lx\t%u\t%llu\t%s\n", f.check, f.kind,
            static_cast<unsigned long>(f.first.pc), f.first.line,
            static_cast<unsigned long>(f.second.pc), f.second.line,
            static_cast<unsigned long long>(f.count), f.message);
  }
  if (g_dropped)
    fprintf(stderr, "METAL_HARNESS_DROPPED %llu %llu\n", static_cast<unsigned long long>(g_dropped),
            static_cast<unsigned long long>(g_dropped_times));
  fflush(stderr);
}

void abort_run() {
  write_findings();
  fprintf(stderr, "METAL_HARNESS_ABORTED\n");
  fflush(stderr);
  _exit(3);
}

void fatal_v(const char* kind, Site site, const char* fmt, va_list ap) {
  char message[512];
  vsnprintf(message, sizeof message, fmt, ap);
  char where[192];
  describe_current(where, sizeof where);
  add_finding(check_of(kind), kind, site, Site{0, 0}, -1, "%s (%s)", message, where);
  abort_run();
}

void fatal(const char* kind, Site site, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fatal_v(kind, site, fmt, ap);
}

void internal_error(const char* message) {
  fprintf(stderr, "METAL_HARNESS_INTERNAL %s\n", message);
  fflush(stderr);
  _exit(3);
}

}  // namespace mh

extern "C" void mh_report(const char* kind, unsigned line, const char* fmt, ...) {
  char* message = mh::new_finding(mh::check_of(kind), kind, mh::Site{0, line}, mh::Site{0, 0}, -1);
  if (!message) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, mh::kMessageSize, fmt, ap);
  va_end(ap);
}

extern "C" void mh_fail(const char* kind, unsigned line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mh::fatal_v(kind, mh::Site{0, line}, fmt, ap);
}
