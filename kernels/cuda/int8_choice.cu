#include "sgemm/int8_tiles.cuh"
#include "sgemm/line_stats.cuh"
#include "sgemm/params.cuh"
// Chapter 7, the INT8 emulation's choice, made on the device: from every line's
// statistics (int8_line_stats.cu, A's rows and B^T's rows), the bits a side and
// the number of moduli, or why the product is not emulated: the rule of
// mlx_sgemm.emulation.scheme.decide, word for word (the GPU tests hold the two
// to the same answer). Made here rather than on the host so that the op never
// waits for the GPU: the residues, products and reconstruction kernels read
// the choice (sgemm::ChoiceWord) where they run, and a product the scheme
// cannot carry is computed by the float32 fallback, all queued at once.
//
// Per finite line (one holding an Inf or NaN is left out: its outputs come
// from the fallback, and the choice says there is one), its lost bits and
// span (sgemm::line_lost_and_span). Then bits = target + the largest lost of
// either operand; an operand whose widest span needs more is "wide" (B named
// when both are), and bits rise to every span + 1; the moduli are the fewest
// whose bound carries that many bits (bits_for, from the host's table), and
// the bits all that they carry.
//
// One block of 1024 threads, a line a thread at a time. params: M, N, K,
// target bits, the most bits a side the path carries, the most moduli, then
// bits_for(K, s) for s = 1..20.
constexpr int TABLE = 20;
const int lines_of[2] = {params[0], params[1]};
const int K = params[2], target = params[3], max_bits = params[4], max_moduli = params[5];
const int* const bits_for = params + 6;
const float* const stats_of[2] = {a_stats, b_stats};

// Each operand's widest span and the first line that has it, in one pass:
// the largest (span, -line) packed in 64 bits. One block reads every line: a
// thread reads BATCH lines of each operand before it looks at any, so that
// their loads wait for memory once, not once a line (a pass over 4096 + 4096
// lines took 11 us as a chain of loads, a read's latency each).
constexpr int BATCH = 4;
auto widest_key = [](int span, int line) {
  return (static_cast<unsigned long long>(span) << 32) | static_cast<unsigned>(2147483647 - line);
};
__shared__ int worst_lost[2], non_finite;
__shared__ unsigned long long widest[2];
if (threadIdx.x == 0) non_finite = 0;
if (threadIdx.x < 2) worst_lost[threadIdx.x] = 0, widest[threadIdx.x] = widest_key(0, 2147483647);
__syncthreads();
int lost_here[2] = {0, 0};
unsigned long long widest_here[2] = {widest_key(0, 2147483647), widest_key(0, 2147483647)};
const int most_lines = max(lines_of[0], lines_of[1]);
for (int first = threadIdx.x; first < most_lines; first += BATCH * blockDim.x) {
  float read[2][BATCH][4];
#pragma unroll
  for (int operand = 0; operand < 2; ++operand)
#pragma unroll
    for (int u = 0; u < BATCH; ++u) {
      const int line = first + u * blockDim.x, lines = lines_of[operand];
      if (line < lines) {
        sgemm::load_line_stats(stats_of[operand], lines, line, read[operand][u]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) read[operand][u][q] = 0.0f;
      }
    }
#pragma unroll
  for (int operand = 0; operand < 2; ++operand)
#pragma unroll
    for (int u = 0; u < BATCH; ++u) {
      const int line = first + u * blockDim.x;
      if (line >= lines_of[operand]) continue;
      if (!sgemm::largest_is_finite(read[operand][u][0])) {
        non_finite = 1;
        continue;
      }
      int lost, span;
      sgemm::line_lost_and_span(read[operand][u], K, lost, span);
      lost_here[operand] = max(lost_here[operand], lost);
      widest_here[operand] = max(widest_here[operand], widest_key(span, line));
    }
}
for (int operand = 0; operand < 2; ++operand) {
  // A warp's largest first, then one shared atomic a warp: 1024 threads'
  // atomics on one word (64-bit ones a compare-and-swap loop each) took most
  // of the kernel's time.
  int lost = __reduce_max_sync(0xffffffffu, lost_here[operand]);
  unsigned long long key = widest_here[operand];
  for (int offset = 16; offset >= 1; offset /= 2) key = max(key, __shfl_xor_sync(0xffffffffu, key, offset));
  if (threadIdx.x % 32 == 0) {
    atomicMax(&worst_lost[operand], lost);
    atomicMax(&widest[operand], key);
  }
}
__syncthreads();
const int worst_span[2] = {static_cast<int>(widest[0] >> 32), static_cast<int>(widest[1] >> 32)};
const int first_widest[2] = {2147483647 - static_cast<int>(widest[0] & 0xffffffffu),
                             2147483647 - static_cast<int>(widest[1] & 0xffffffffu)};
const int needed = target + max(worst_lost[0], worst_lost[1]);
const bool wide[2] = {worst_span[0] + 1 > needed, worst_span[1] + 1 > needed};
// The first line of the widest span, of the operand the choice names.
const int named = wide[1] ? 1 : 0;
__syncthreads();
if (threadIdx.x != 0) return;

int bits = max(needed, max(worst_span[0], worst_span[1]) + 1), moduli = 0, reason = 0;
if (bits > max_bits) {
  reason = 1;  // scheme.Reason.TOO_MANY_BITS
} else {
  for (int s = 1; s <= TABLE && moduli == 0; ++s)
    if (bits_for[s - 1] >= bits) moduli = s;
  if (moduli == 0 || moduli > max_moduli) {
    moduli = 0, reason = 2;  // scheme.Reason.TOO_MANY_MODULI
  } else {
    bits = max(bits, min(bits_for[moduli - 1], max_bits));  // all the bits the moduli carry
  }
}
choice[sgemm::CHOICE_MODULI] = moduli;
choice[sgemm::CHOICE_BITS] = bits;
choice[sgemm::CHOICE_REASON] = reason;
choice[sgemm::CHOICE_A_LOST] = worst_lost[0];
choice[sgemm::CHOICE_B_LOST] = worst_lost[1];
choice[sgemm::CHOICE_A_SPAN] = worst_span[0];
choice[sgemm::CHOICE_B_SPAN] = worst_span[1];
choice[sgemm::CHOICE_WIDE_OPERAND] = wide[named] ? named + 1 : 0;
choice[sgemm::CHOICE_WIDE_LINE] = wide[named] ? first_widest[named] : -1;
choice[sgemm::CHOICE_NON_FINITE] = non_finite;
