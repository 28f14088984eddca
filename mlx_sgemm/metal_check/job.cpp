// The runner's entry point: one Metal dispatch on the CPU, checked.
//
//   runner JOB OUT
//
// JOB (written by runner.py) gives the grid and threadgroup size in threads,
// a seed, which end of each buffer to put against a page boundary, and the
// buffers in Metal's binding order, each with its kind (an input; an output
// MLX leaves uninitialized; an output filled with init_value, whose bytes
// follow), its size, the offset at which the kernel's pointer into it points
// (MLX binds an array at its own offset into its buffer; with negative
// strides that is not the buffer's start) and its element size. OUT receives
// the output buffers. stderr gets the findings (findings.cpp) and, after a
// run that went to the end, "METAL_HARNESS_STATS async_copies=<n>".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

using namespace mh;

namespace {

enum BufferKind : uint64_t { kInput = 0, kOutputUninitialized = 1, kOutputInitialized = 2 };

void read_exact(FILE* f, void* out, size_t n) {
  if (fread(out, 1, n, f) != n) internal_error("truncated job file");
}

uint64_t read_u64(FILE* f) {
  uint64_t v;
  read_exact(f, &v, sizeof v);
  return v;
}

// initcheck, after the run: elements of an uninitialized output that no
// thread wrote (MLX hands them back holding whatever the memory held).
void report_unwritten(const Region& r, size_t elem_size) {
  if (!r.written || elem_size == 0) return;
  const size_t elements = r.size / elem_size;
  size_t missing = 0, first = 0;
  for (size_t e = elements; e-- > 0;) {
    bool any = false;
    for (size_t b = 0; b < elem_size && !any; ++b) any = r.written[e * elem_size + b] != 0;
    if (!any) {
      ++missing;
      first = e;
    }
  }
  if (missing)
    add_finding("initcheck", "unwritten", Site{0, 0}, Site{0, 0}, int(&r - region(0)),
                "%zu of the %zu elements of %s were never written (the first: element %zu); "
                "MLX returns them uninitialized unless init_value is given",
                missing, elements, r.name, first);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s JOB OUT\n", argv[0]);
    return 2;
  }
  FILE* job = fopen(argv[1], "rb");
  if (!job) {
    perror(argv[1]);
    return 2;
  }
  char magic[8];
  read_exact(job, magic, 8);
  if (memcmp(magic, "MHJOB003", 8) != 0) internal_error("not a job file");
  Dispatch d;
  for (uint32_t& g : d.grid) g = uint32_t(read_u64(job));
  for (uint32_t& t : d.group) t = uint32_t(read_u64(job));
  const uint64_t seed = read_u64(job);
  const uint64_t align_end = read_u64(job);
  const int nbuf = int(read_u64(job));
  if (nbuf != mh_buffer_count) {
    char message[128];
    snprintf(message, sizeof message, "the kernel binds %d buffers, the job has %d",
             mh_buffer_count, nbuf);
    internal_error(message);
  }
  void** buffers = static_cast<void**>(calloc(size_t(nbuf) + 1, sizeof(void*)));
  Region** regions = static_cast<Region**>(calloc(size_t(nbuf) + 1, sizeof(Region*)));
  uint64_t* kinds = static_cast<uint64_t*>(calloc(size_t(nbuf) + 1, sizeof(uint64_t)));
  size_t* elem_sizes = static_cast<size_t*>(calloc(size_t(nbuf) + 1, sizeof(size_t)));
  for (int i = 0; i < nbuf; ++i) {
    char name[40] = {0};
    read_exact(job, name, 32);
    kinds[i] = read_u64(job);
    const size_t size = size_t(read_u64(job));
    const size_t offset = size_t(read_u64(job));  // where in the buffer the kernel's pointer points
    elem_sizes[i] = size_t(read_u64(job));
    if (offset != 0 && offset >= size) internal_error("a buffer offset outside its buffer");
    char label[64];
    snprintf(label, sizeof label, "buffer(%d) %s", i, name);
    Region* r = new_region(label, kinds[i] == kInput ? INPUT : OUTPUT, size, align_end != 0);
    if (kinds[i] != kInput) track_writers(*r);
    if (kinds[i] == kOutputUninitialized) {
      memset(r->data, kPoison, size);  // as ops.poisoned_outputs: NaN everywhere
      track_region(*r, true, false);
    } else {
      read_exact(job, r->data, size);
      if (kinds[i] == kInput) make_read_only(*r);
    }
    buffers[i] = r->data + offset;
    regions[i] = r;
  }
  fclose(job);

  // MLX: group_dims = min(threadgroup, grid) on each axis.
  for (int i = 0; i < 3; ++i) {
    if (d.grid[i] == 0 || d.group[i] == 0) internal_error("empty grid or threadgroup");
    if (d.group[i] > d.grid[i]) d.group[i] = d.grid[i];
    d.groups[i] = (d.grid[i] + d.group[i] - 1) / d.group[i];
  }
  const uint32_t threads = d.group[0] * d.group[1] * d.group[2];
  if (threads > uint32_t(kMaxThreads))
    fatal("resources", Site{0, 0}, "%u threads per threadgroup; Metal allows %d", threads,
          kMaxThreads);
  start_dispatch(d, buffers, seed);
  install_fault_handlers();
  run_dispatch(d);

  FILE* out = fopen(argv[2], "wb");
  if (!out) {
    perror(argv[2]);
    return 2;
  }
  for (int i = 0; i < nbuf; ++i) {
    check_canary(*regions[i]);
    if (kinds[i] == kOutputUninitialized) report_unwritten(*regions[i], elem_sizes[i]);
    if (kinds[i] != kInput) fwrite(regions[i]->data, 1, regions[i]->size, out);
  }
  fclose(out);
  write_findings();
  fprintf(stderr, "METAL_HARNESS_STATS async_copies=%llu\n",
          static_cast<unsigned long long>(g_async_copies));
  return 0;
}
