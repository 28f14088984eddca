#include "sgemm/async_copy.cuh"
#include "sgemm/mma_int8.cuh"
#include "sgemm/schedule.cuh"
// Chapter 7, the INT8 emulation's modular products: for each of the s moduli,
// the residues of A (int8, [s, M, Kp]) times those of B (int8, [s, N, Kp], B
// transposed: both K-contiguous) into int32 (products, [s, M, N]) on the INT8
// tensor cores. Exact: the residues lie in [-128, 127] and the Python side
// keeps K * 128^2 < 2^31 (mlx_sgemm/emulation/moduli.py). Kp is K padded with
// zeros to a multiple of BK (64 bytes), so every k-tile is whole and every row
// starts 16-byte aligned.
//
// tile_async's pipeline on bytes: cp.async copies run STAGES - 1 k-tiles ahead
// into a ring of shared-memory stages, one barrier per k-tile. A stage holds
// A's BM rows and B's BN rows of BK bytes each, LD = BK + 16 bytes apart: with
// 80-byte rows, the 8 rows x 16 bytes each ldmatrix phase reads start at banks
// 20 r mod 32 = 0, 20, 8, 28, 16, 4, 24, 12 and cover 32 distinct banks.
// 8 warps of WM x WN, m16n8k32 products (sgemm/mma_int8.cuh).
//
// Blocks: x = modulus * tiles + tile, tiles walked in bands of GROUP_M rows.
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = (BM / WM) * WARPS_N * 32;
static_assert(THREADS == 256, "the spec launches 256 threads");
static_assert(BK == 64, "a k-tile is two k32 steps: the B fragment loads take 64 bytes");
constexpr int MI = WM / 16, NI = WN / 8;
constexpr int LD = BK + 16;  // bytes per shared-memory row
constexpr int A_BYTES = BM * LD, STAGE_BYTES = (BM + BN) * LD;
constexpr int CHUNKS = BK / 16;  // 16-byte copies per row of a k-tile
constexpr int A_COPIES = BM * CHUNKS / THREADS, B_COPIES = BN * CHUNKS / THREADS;
static_assert(BM * CHUNKS % THREADS == 0 && BN * CHUNKS % THREADS == 0, "even copies");

// The spec asks MLX for STAGES * STAGE_BYTES bytes (mlx_sgemm/build/specs.py).
extern __shared__ int4 smem_int4[];
int8_t* const smem = reinterpret_cast<int8_t*>(smem_int4);
const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));

const int M = params[sgemm::R_M], N = params[sgemm::R_N], Kp = params[sgemm::R_KP];
const int tiles_m = params[sgemm::R_TILES_M], tiles_n = params[sgemm::R_TILES_N];
const int tiles = tiles_m * tiles_n;
const int modulus = blockIdx.x / tiles;
int row0, col0;
sgemm::tile_origin<GROUP_M>(blockIdx.x % tiles, tiles_m, tiles_n, BM, BN, row0, col0);
const int8_t* const A = ra + static_cast<int64_t>(modulus) * M * Kp;
const int8_t* const B = rb + static_cast<int64_t>(modulus) * N * Kp;
int32_t* const C = products + static_cast<int64_t>(modulus) * M * N;

// Each thread's copies, worked out once: copy j of k-tile kt reads
// src[j] + kt * BK. Rows past M (N) are zero-filled; their source, never
// read, is row 0's (inside the array, so the address stays valid).
const int8_t* a_src[A_COPIES];
const int8_t* b_src[B_COPIES];
int a_dst[A_COPIES], b_dst[B_COPIES], a_bytes[A_COPIES], b_bytes[B_COPIES];
// Copy j of an operand whose tile starts at row `first` of `rows`, landing
// `offset` bytes into the stage.
auto plan = [&](int j, const int8_t* x, int first, int rows, int offset,
                const int8_t*& src, int& dst, int& bytes) {
  const int chunk = j * THREADS + threadIdx.x, r = chunk / CHUNKS, c = (chunk % CHUNKS) * 16;
  const bool in = first + r < rows;
  src = x + static_cast<int64_t>(in ? first + r : 0) * Kp + c;
  bytes = in ? 16 : 0;
  dst = offset + r * LD + c;
};
#pragma unroll
for (int j = 0; j < A_COPIES; ++j) plan(j, A, row0, M, 0, a_src[j], a_dst[j], a_bytes[j]);
#pragma unroll
for (int j = 0; j < B_COPIES; ++j) plan(j, B, col0, N, A_BYTES, b_src[j], b_dst[j], b_bytes[j]);
// cp_async takes float pointers; the copy is of 16 bytes whatever they hold.
auto start_loading = [&](int kt) {
  int8_t* stage = smem + (kt % STAGES) * STAGE_BYTES;
  const int step = kt * BK;
#pragma unroll
  for (int j = 0; j < A_COPIES; ++j)
    sgemm::cp_async<16>(reinterpret_cast<float*>(stage + a_dst[j]),
                        reinterpret_cast<const float*>(a_src[j] + step), a_bytes[j]);
#pragma unroll
  for (int j = 0; j < B_COPIES; ++j)
    sgemm::cp_async<16>(reinterpret_cast<float*>(stage + b_dst[j]),
                        reinterpret_cast<const float*>(b_src[j] + step), b_bytes[j]);
};

const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
const int k_tiles = Kp / BK;

// Prologue: STAGES - 1 k-tiles in flight; one group committed per iteration
// (empty past the end), so "STAGES - 2 groups pending" means "the oldest landed".
for (int kt = 0; kt < STAGES - 1; ++kt) {
  if (kt < k_tiles) start_loading(kt);
  sgemm::cp_async_commit();
}

int32_t acc[MI][NI][4] = {};
for (int kt = 0; kt < k_tiles; ++kt) {
  sgemm::cp_async_wait<STAGES - 2>();
  // k-tile kt is visible to all threads, and all have finished k-tile kt - 1,
  // whose stage the next copy reuses.
  __syncthreads();
  if (kt + STAGES - 1 < k_tiles) start_loading(kt + STAGES - 1);
  sgemm::cp_async_commit();
  const uint32_t as = smem_base + (kt % STAGES) * STAGE_BYTES, bs = as + A_BYTES;
  uint32_t b_frag[NI][4];  // both k32 steps of each n8 tile
#pragma unroll
  for (int j = 0; j < NI; ++j)
    sgemm::ldmatrix_x4(b_frag[j], sgemm::b_fragment_row(bs, LD, wn0 + j * 8, lane));
#pragma unroll
  for (int ks = 0; ks < BK / 32; ++ks) {
    uint32_t a_frag[MI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
      sgemm::ldmatrix_x4(a_frag[i], sgemm::a_fragment_row(as, LD, wm0 + i * 16, ks * 32, lane));
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
        sgemm::mma_m16n8k32_s8(acc[i][j], a_frag[i], b_frag[j][2 * ks], b_frag[j][2 * ks + 1]);
  }
}

// Store, dropping what overhangs C.
const int g = lane / 4, tg = lane % 4;
#pragma unroll
for (int i = 0; i < MI; ++i)
#pragma unroll
  for (int j = 0; j < NI; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row0 + wm0 + i * 16 + g + (e / 2) * 8, c = col0 + wn0 + j * 8 + 2 * tg + e % 2;
      if (r < M && c < N) C[static_cast<int64_t>(r) * N + c] = acc[i][j][e];
    }
