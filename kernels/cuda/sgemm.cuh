// mlx-sgemm: the pieces every CUDA stage shares. Handed to mx.fast.cuda_kernel as
// `header=`; MLX writes the kernel signature around each stage's body:
//
//   __global__ void custom_kernel_sgemm_<stage>(
//       const float* a, Shape a_shape, Strides a_strides,
//       const float* b, Shape b_shape, Strides b_strides,
//       const int32_t* params, float* c)
//
// with the stage's template constants (TILE, BM, ...) declared constexpr inside.
// NVRTC compiles it, without the C++ standard library: MLX's own device header
// (included before this one) brings the fixed-width integer types.
#ifndef MLX_SGEMM_CUH
#define MLX_SGEMM_CUH

// Launch bounds. MLX writes the kernel's signature, leaving no place for
// __launch_bounds__, yet without it ptxas may spend so many registers per thread
// that fewer blocks fit on an SM than the kernel was designed for. __global__ is
// itself a macro of CUDA's headers (host_defines.h), so a spec that asks for
// min_blocks gets it redefined here to carry the bounds into the one kernel of
// this source. SGEMM_MAX_THREADS / SGEMM_MIN_BLOCKS come from mlx_sgemm/specs.py.
#if defined(SGEMM_MIN_BLOCKS)
#undef __global__
#define __global__ \
  __location__(global) __launch_bounds__(SGEMM_MAX_THREADS, SGEMM_MIN_BLOCKS)
#endif

namespace sgemm {

// Layout of `params` (written by mlx_sgemm/problem.py, Plan.params).
enum Param { P_M, P_N, P_K, P_TILES_M, P_TILES_N, P_BATCH_NDIM, P_BATCH_SHAPE };

__device__ inline bool is_16_byte_aligned(const float* p) {
  return reinterpret_cast<unsigned long long>(p) % 16 == 0;
}

// A rows x cols operand as MLX hands it over: element (r, c) at p[r * rs + c * cs].
// Row-major arrays have cs == 1; transposed views (a.T, swapaxes) have rs == 1;
// any other strides (slices, broadcasts) are read element by element. No copy is
// made for any of them.
struct Operand {
  const float* p;
  int64_t rs, cs;
  int rows, cols;

  __device__ float operator()(int r, int c) const { return p[r * rs + c * cs]; }

  // Element (r, c), or 0 outside the matrix: tiles that overhang the edge read
  // zeros, which add nothing to a dot product.
  __device__ float at(int r, int c) const {
    return (r < rows && c < cols) ? (*this)(r, c) : 0.0f;
  }

  // The same matrix seen transposed (no data moves).
  __device__ Operand transposed() const { return {p, cs, rs, cols, rows}; }

  // Can 4 neighbours along a row, starting at a multiple of 4, be read with one
  // aligned 16-byte load?
  __device__ bool rows_vectorize() const {
    return cs == 1 && rs % 4 == 0 && is_16_byte_aligned(p);
  }

  // Elements (r, c..c+3), zero outside; one 16-byte load inside the matrix
  // (the caller checked rows_vectorize()).
  __device__ float4 row4(int r, int c) const {
    if (r < rows && c + 3 < cols) return *reinterpret_cast<const float4*>(p + r * rs + c);
    return make_float4(at(r, c), at(r, c + 1), at(r, c + 2), at(r, c + 3));
  }
};

// One threadgroup's job: one block of C in one batch entry, the operands of that
// batch entry, and where its block of C goes (C is always row-major).
struct Tile {
  int M, N, K;
  int row0, col0;  // first row and column of C this block writes
  Operand A, B;    // M x K and K x N
  float* C;
  int64_t ldc;
};

// Blocks are numbered along the grid's x axis: batch entry, then tile. Operands
// have the output's batch rank (the Python side merges and pads batch dims); a
// batch dim of extent 1 is broadcast, so it adds no offset.
//
// GROUP_M = 1 walks the tiles row by row. GROUP_M > 1 walks them in bands of
// GROUP_M tile rows, column by column inside a band: blocks that run at the same
// time then share GROUP_M row tiles of A and a few column tiles of B instead of
// one row of A and all of B, and far more of what they read is still in L2.
template <int GROUP_M = 1, typename Shape, typename Strides>
__device__ inline Tile locate_tile(
    int block_m, int block_n, const int32_t* params,
    const float* a, const Shape& a_shape, const Strides& a_strides,
    const float* b, const Shape& b_shape, const Strides& b_strides,
    float* c) {
  Tile t;
  t.M = params[P_M];
  t.N = params[P_N];
  t.K = params[P_K];
  const int tiles_m = params[P_TILES_M], tiles_n = params[P_TILES_N];
  const int tiles = tiles_m * tiles_n;
  const int nd = params[P_BATCH_NDIM];
  const int block = blockIdx.x;
  const int tile = block % tiles;
  if (GROUP_M == 1) {
    t.row0 = (tile / tiles_n) * block_m;
    t.col0 = (tile % tiles_n) * block_n;
  } else {
    const int band = tile / (GROUP_M * tiles_n);
    const int band_rows = min(GROUP_M, tiles_m - band * GROUP_M);
    const int in_band = tile % (GROUP_M * tiles_n);
    t.row0 = (band * GROUP_M + in_band % band_rows) * block_m;
    t.col0 = (in_band / band_rows) * block_n;
  }

  int rest = block / tiles;
  const int64_t batch = rest;
  int64_t a_off = 0, b_off = 0;
  for (int i = nd - 1; i >= 0; --i) {
    const int extent = params[P_BATCH_SHAPE + i];
    const int idx = rest % extent;
    rest /= extent;
    if (a_shape[i] != 1) a_off += idx * a_strides[i];
    if (b_shape[i] != 1) b_off += idx * b_strides[i];
  }
  t.A = {a + a_off, a_strides[nd], a_strides[nd + 1], t.M, t.K};
  t.B = {b + b_off, b_strides[nd], b_strides[nd + 1], t.K, t.N};
  t.ldc = t.N;
  t.C = c + batch * t.M * t.N;
  return t;
}

// Copy the ROWS x COLS tile of x at (r0, c0) into shared memory (row stride LD),
// zeros outside x, through registers. A row-major x with aligned rows is read 16
// bytes at a time; any other layout (a transposed view, a strided slice) element
// by element, consecutive threads walking x's contiguous direction so the loads
// still coalesce. The kernels that use this are bound by arithmetic, not by
// load instructions: the element path costs them little.
template <int ROWS, int COLS, int LD, int THREADS>
__device__ inline void load_tile(float* smem, const Operand& x, int r0, int c0) {
  static_assert(COLS % 4 == 0 && LD % 4 == 0, "rows are whole float4s");
  static_assert(ROWS * COLS % (4 * THREADS) == 0, "every thread loads the same amount");
  if (x.rows_vectorize()) {
#pragma unroll
    for (int j = 0; j < ROWS * COLS / (4 * THREADS); ++j) {
      const int i = j * THREADS + threadIdx.x;
      const int r = i / (COLS / 4), c = (i % (COLS / 4)) * 4;
      *reinterpret_cast<float4*>(smem + r * LD + c) = x.row4(r0 + r, c0 + c);
    }
  } else {
    // A rolled loop: unrolled, ptxas would keep every element's address live
    // across the whole k loop and run out of registers.
    const bool down = x.rs == 1;
#pragma unroll 1
    for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
      const int r = down ? i % ROWS : i / COLS, c = down ? i / ROWS : i % COLS;
      smem[r * LD + c] = x.at(r0 + r, c0 + c);
    }
  }
}

// Store columns c..c+3 of row r of a row-major matrix, dropping what falls
// outside it; one 16-byte store when whole and aligned.
__device__ inline void store4_clipped(
    float* p, int64_t ld, int r, int c, int rows, int cols, bool aligned, float4 v) {
  if (r >= rows) return;
  float* dst = p + r * ld + c;
  if (aligned && c + 3 < cols) {
    *reinterpret_cast<float4*>(dst) = v;
    return;
  }
  if (c < cols) dst[0] = v.x;
  if (c + 1 < cols) dst[1] = v.y;
  if (c + 2 < cols) dst[2] = v.z;
  if (c + 3 < cols) dst[3] = v.w;
}

// ---------------------------------------------------------------------------
// Tensor cores: TF32 mma.sync and the 3xTF32 split that keeps float32 accuracy.
// ---------------------------------------------------------------------------

// Round to TF32 (10 explicit mantissa bits), to nearest, ties away from zero.
__device__ inline uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small, each exactly a TF32 number (to about 2^-22 relative), so
// a*b ~= a_big*b_big + a_big*b_small + a_small*b_big with float32 accuracy: the
// dropped a_small*b_small term is below float32 rounding.
//
// Non-finite x: big carries the Inf or NaN and small is 0. In the cross terms
// that Inf would meet the other operand's small part, which is exactly 0
// whenever that operand is a TF32 number, and Inf * 0 is NaN where the true
// product is Inf. So the cross terms use `big_finite`, which is 0 for a
// non-finite x: only big*big sees the Inf, as the exact product would.
struct SplitTF32 {
  uint32_t big, small, big_finite;
};

__device__ inline SplitTF32 split_tf32(float x) {
  SplitTF32 s;
  s.big = to_tf32(x);
  const bool finite = isfinite(x);
  if (finite && isinf(__uint_as_float(s.big))) {
    s.big = __float_as_uint(x) & 0xffffe000u;  // rounding overflowed: truncate
  }
  s.small = finite ? to_tf32(x - __uint_as_float(s.big)) : 0u;
  s.big_finite = finite ? s.big : 0u;
  return s;
}

// D += A * B for one m16n8k8 tile: A 16x8 row-major (4 registers per thread),
// B 8x8 column-major (2 registers), D 16x8 float32 (4 registers). Fragment
// layout, with g = lane / 4 and t = lane % 4:
//   a0 (g, t)  a1 (g+8, t)  a2 (g, t+4)  a3 (g+8, t+4)
//   b0 (t, g)  b1 (t+4, g)
//   d0 (g, 2t) d1 (g, 2t+1) d2 (g+8, 2t) d3 (g+8, 2t+1)
__device__ inline void mma_m16n8k8_tf32(
    float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += A * B to float32 accuracy with three TF32 tensor-core products (see
// SplitTF32); the a_small * b_small term falls below float32 rounding.
__device__ inline void mma_3xtf32(
    float (&d)[4],
    const uint32_t (&a_big)[4], const uint32_t (&a_big_finite)[4], const uint32_t (&a_small)[4],
    const uint32_t (&b_big)[2], const uint32_t (&b_big_finite)[2], const uint32_t (&b_small)[2]) {
  mma_m16n8k8_tf32(d, a_small, b_big_finite);
  mma_m16n8k8_tf32(d, a_big_finite, b_small);
  mma_m16n8k8_tf32(d, a_big, b_big);
}

// ---------------------------------------------------------------------------
// Warp tiles: one warp's share of a block, as MI x NI m16n8 products.
// ---------------------------------------------------------------------------

// acc += As * Bs over one shared-memory k-tile, for the warp whose WM x WN
// output tile starts at (wm0, wn0) of the block. As is BM x BK with row stride
// AS_LD, Bs is BK x BN with row stride BS_LD; with BK + 4 and BN + 8 as strides,
// a warp's fragment reads hit 32 different banks.
//
// SPLIT selects 3xTF32 (float32 accuracy). The tensor cores add into their
// accumulator rounding toward zero, so letting them accumulate over all of K
// biases every step the same way and the error grows with K (measured on an
// H200: 25x cuBLAS SGEMM's at K = 4096). So the k-tile's products go into a
// fresh accumulator `part`, which the FP32 units, rounding to nearest, add to
// `acc` (after Ootomo & Yokota, 2022). Without SPLIT: one TF32 product per step,
// accumulated by the tensor cores, like cuBLAS's TF32 mode.
template <int MI, int NI, int BK, int AS_LD, int BS_LD, bool SPLIT>
__device__ inline void warp_tile_mma(
    float (&acc)[MI][NI][4], const float* As, const float* Bs, int wm0, int wn0) {
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, tg = lane % 4;  // this lane's fragment coordinates
  float part[MI][NI][4] = {};
  float (&sum)[MI][NI][4] = SPLIT ? part : acc;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 8) {
    // Split each A fragment element once; it serves NI products. B's fragments
    // are split one n8 tile at a time, which saves registers for accumulators.
    uint32_t a_big[MI][4], a_big_finite[MI][4], a_small[MI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const float* a = As + (wm0 + i * 16 + g) * AS_LD + kk + tg;
      const float v[4] = {a[0], a[8 * AS_LD], a[4], a[8 * AS_LD + 4]};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (SPLIT) {
          const SplitTF32 s = split_tf32(v[e]);
          a_big[i][e] = s.big;
          a_big_finite[i][e] = s.big_finite;
          a_small[i][e] = s.small;
        } else {
          a_big[i][e] = to_tf32(v[e]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const float* b = Bs + (kk + tg) * BS_LD + wn0 + j * 8 + g;
      uint32_t b_big[2], b_big_finite[2], b_small[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float v = b[e * 4 * BS_LD];
        if (SPLIT) {
          const SplitTF32 s = split_tf32(v);
          b_big[e] = s.big;
          b_big_finite[e] = s.big_finite;
          b_small[e] = s.small;
        } else {
          b_big[e] = to_tf32(v);
        }
      }
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        if (SPLIT) {
          mma_3xtf32(sum[i][j], a_big[i], a_big_finite[i], a_small[i],
                     b_big, b_big_finite, b_small);
        } else {
          mma_m16n8k8_tf32(sum[i][j], a_big[i], b_big);
        }
      }
    }
  }
  if (SPLIT) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e];
  }
}

// Write a warp's MI x NI accumulator tiles to C, dropping what overhangs it.
template <int MI, int NI>
__device__ inline void store_warp_tile(
    const Tile& t, const float (&acc)[MI][NI][4], int wm0, int wn0) {
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, tg = lane % 4;
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int row = t.row0 + wm0 + i * 16 + g;
      const int col = t.col0 + wn0 + j * 8 + 2 * tg;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = row + (e / 2) * 8, c = col + e % 2;
        if (r < t.M && c < t.N) t.C[r * t.ldc + c] = acc[i][j][e];
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Asynchronous copies (cp.async, sm_80+): device memory -> shared memory
// without passing through registers, so loads for later k-tiles can be in
// flight while the warps compute on the current one.
// ---------------------------------------------------------------------------

// Copy `bytes` (16 or 4) from gmem to smem; source bytes past `src_bytes` are
// not read and their destination is zero-filled (how edge tiles get zeros).
template <int BYTES>
__device__ inline void cp_async(float* smem, const float* gmem, int src_bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(gmem), "r"(src_bytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(dst), "l"(gmem), "r"(src_bytes));
  }
}

__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Wait until at most N committed groups are still in flight.
template <int N>
__device__ inline void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

// Start copying the ROWS x COLS tile of x at (r0, c0) into shared memory (row
// stride LD), zeros outside x. Row-major x with aligned rows: one 16-byte copy
// per 4 columns (a partial one at the edge). Any other layout (a transposed view,
// say): 4-byte copies, consecutive threads walking x's contiguous direction.
template <int ROWS, int COLS, int LD, int THREADS>
__device__ inline void cp_async_tile(float* smem, const Operand& x, int r0, int c0) {
  constexpr int VECTORS = ROWS * COLS / 4;
  static_assert(VECTORS % THREADS == 0, "every thread copies the same amount");
  if (x.rows_vectorize()) {
#pragma unroll
    for (int j = 0; j < VECTORS / THREADS; ++j) {
      const int i = j * THREADS + threadIdx.x;
      const int r = i / (COLS / 4), c = (i % (COLS / 4)) * 4;
      const int gr = r0 + r, gc = c0 + c;
      const int valid = gr < x.rows ? max(0, min(4, x.cols - gc)) : 0;
      cp_async<16>(smem + r * LD + c, valid ? x.p + gr * x.rs + gc : x.p, 4 * valid);
    }
  } else {
    const bool down = x.rs == 1;
#pragma unroll 1  // see load_tile
    for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
      const int r = down ? i % ROWS : i / COLS, c = down ? i / ROWS : i % COLS;
      const int gr = r0 + r, gc = c0 + c;
      const bool valid = gr < x.rows && gc < x.cols;
      cp_async<4>(smem + r * LD + c, valid ? x.p + gr * x.rs + gc * x.cs : x.p, valid ? 4 : 0);
    }
  }
}

}  // namespace sgemm

#endif  // MLX_SGEMM_CUH
