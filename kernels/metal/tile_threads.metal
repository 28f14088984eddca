#include "sgemm/epilogue.h"
#include "sgemm/load.h"
#include "sgemm/schedule.h"
// Stage 3, tile_threads: register tiling. An 8x8 threadgroup computes a
// (8*WPT) x (8*WPT) = 32x32 block of C, each thread WPT x WPT = 4x4 outputs
// held in registers (the M2 SGEMM journey's shape; see kernels/cuda/tile_threads.cu for the
// 8x8-per-thread NVIDIA version).
//
// Why: in the tiled stage every multiply-add reads two values from threadgroup
// memory. Here a thread reads WPT values of A and WPT of B per step of k and
// does WPT * WPT = 16 multiply-adds with them: 4x fewer threadgroup-memory reads
// per multiply-add. 16 accumulators sit comfortably in an Apple GPU thread's
// registers, and a 64-thread threadgroup with 4 KiB of threadgroup memory
// leaves room for many resident threadgroups to hide memory latency.
//
// A thread's outputs are strided (rows ty + 8*i, columns tx + 8*j) rather than
// the M2 SGEMM journey's contiguous 4x4 block: then the 8 threads of a row read 8
// consecutive words of Bs (a stride of 4 words would make them collide in the
// memory banks) and store 8 consecutive columns of C.
constexpr int TG = 8;  // threads per side of the threadgroup (the spec's (8, 8, 1))
constexpr int THREADS = TG * TG;
constexpr int TILE_M = TG * WPT;
constexpr int TILE_N = TG * WPT;
static_assert((TILE_M * TILE_K) % THREADS == 0 && (TILE_K * TILE_N) % THREADS == 0,
              "every thread loads the same number of tile elements");

// +1 column: the rows a simdgroup reads at once start in different banks (and
// so do the rows it writes at once when it copies a column-major operand).
threadgroup float As[TILE_M][TILE_K + 1];
threadgroup float Bs[TILE_K][TILE_N + 1];

const auto t = sgemm::locate_tile(
    TILE_M, TILE_N, threadgroup_position_in_grid.x, params,
    a, a_shape, a_strides, b, b_shape, b_strides, c);
const int tx = int(thread_position_in_threadgroup.x);
const int ty = int(thread_position_in_threadgroup.y);
const int tid = ty * TG + tx;

float acc[WPT][WPT];
for (int i = 0; i < WPT; ++i) {
  for (int j = 0; j < WPT; ++j) {
    acc[i][j] = 0.0f;
  }
}

for (int k0 = 0; k0 < t.K; k0 += TILE_K) {
  sgemm::load_tile<TILE_K>(As, t.A, t.row0, k0, tid, THREADS);
  sgemm::load_tile<TILE_N>(Bs, t.B, k0, t.col0, tid, THREADS);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // the tiles are complete

#pragma clang loop unroll(full)
  for (int k = 0; k < TILE_K; ++k) {
    float av[WPT], bv[WPT];
    for (int i = 0; i < WPT; ++i) av[i] = As[ty + TG * i][k];
    for (int j = 0; j < WPT; ++j) bv[j] = Bs[k][tx + TG * j];
    for (int i = 0; i < WPT; ++i) {
      for (int j = 0; j < WPT; ++j) {
        acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // everyone has read them
}

for (int i = 0; i < WPT; ++i) {
  for (int j = 0; j < WPT; ++j) {
    sgemm::store_clipped(t.C, t.ldc, t.row0 + ty + TG * i, t.col0 + tx + TG * j, t.M, t.N,
                         acc[i][j]);
  }
}
