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

// Which way an operand's elements lie next to each other in memory: along its
// rows (row-major, cs == 1) or down its columns (rs == 1: a transposed view).
enum Layout { ROW_MAJOR, COL_MAJOR };

// A rows x cols operand as MLX hands it over: element (r, c) at p[r * rs + c * cs].
// Row-major arrays have cs == 1; transposed views (a.T, swapaxes) have rs == 1;
// other strides (slices, broadcasts) are read element by element. No copy is
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

  __device__ Layout layout() const { return (rs == 1 && cs != 1) ? COL_MAJOR : ROW_MAJOR; }

  // Can 4 neighbours in direction L (along a row / down a column), starting at a
  // multiple of 4, be read with one aligned 16-byte load?
  template <Layout L>
  __device__ bool vectorizes() const {
    return L == ROW_MAJOR ? cs == 1 && rs % 4 == 0 && is_16_byte_aligned(p)
                          : rs == 1 && cs % 4 == 0 && is_16_byte_aligned(p);
  }

  // 4 neighbours from (r, c) in direction L, zero outside the matrix: one
  // 16-byte load when `vector` (= vectorizes<L>()) and all 4 are inside.
  template <Layout L>
  __device__ float4 load4(int r, int c, bool vector) const {
    if (L == ROW_MAJOR) {
      if (vector && r < rows && c + 3 < cols) return *reinterpret_cast<const float4*>(p + r * rs + c);
      return make_float4(at(r, c), at(r, c + 1), at(r, c + 2), at(r, c + 3));
    }
    if (vector && c < cols && r + 3 < rows) return *reinterpret_cast<const float4*>(p + r + c * cs);
    return make_float4(at(r, c), at(r + 1, c), at(r + 2, c), at(r + 3, c));
  }
};

// How a stage declares its per-layout main loop (a lambda, see with_layouts):
// not inlined. Inlined, the four layout instances share one register
// allocation and ptxas spills heavily; as separate functions each gets its own.
#define SGEMM_MAIN_LOOP __attribute__((noinline))

template <Layout L>
struct LayoutTag {
  static constexpr Layout value = L;
};

// Run f(LayoutTag<layout of x>{}, LayoutTag<layout of y>{}): the kernel's main
// loop is compiled once per layout pair, each instance with just the loads its
// layouts need (one generic instance would need the registers of all of them).
// The price, measured on an H200 (benchmarks/NOTES.md): the out-of-line main
// loop reads the captured tile through memory, which costs the light TF32 loop
// half its speed; a row-major-only inlined loop would run it 2x faster.
template <typename F>
__device__ inline void with_layouts(const Operand& x, const Operand& y, F&& f) {
  const bool x_col = x.layout() == COL_MAJOR, y_col = y.layout() == COL_MAJOR;
  if (!x_col && !y_col) f(LayoutTag<ROW_MAJOR>{}, LayoutTag<ROW_MAJOR>{});
  else if (!x_col) f(LayoutTag<ROW_MAJOR>{}, LayoutTag<COL_MAJOR>{});
  else if (!y_col) f(LayoutTag<COL_MAJOR>{}, LayoutTag<ROW_MAJOR>{});
  else f(LayoutTag<COL_MAJOR>{}, LayoutTag<COL_MAJOR>{});
}

// with_layouts for one operand: f(LayoutTag<layout of x>{}).
template <typename F>
__device__ inline void with_layout(const Operand& x, F&& f) {
  if (x.layout() == COL_MAJOR) f(LayoutTag<COL_MAJOR>{});
  else f(LayoutTag<ROW_MAJOR>{});
}

// One threadgroup's job: one block of C in one batch entry, the operands of that
// batch entry, and where its block of C goes (C is always row-major).
struct Tile {
  int M, N, K;
  int row0, col0;  // first row and column of C this block writes
  int k0;          // where its stretch of K starts (split-K); A and B start there already
  Operand A, B;    // M x K and K x N
  float* C;
  int64_t ldc;
};

// Blocks are numbered along the grid's x axis: K split, batch entry, then tile.
// Operands have the output's batch rank (the Python side merges and pads batch
// dims); a batch dim of extent 1 is broadcast, so it adds no offset. With K
// split (Plan.params), the tile's operands start at its split's first k and
// its K is that split's length; its C is its own partial product.
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

  // Which output matrix: batch entry, and (split-K) which stretch of K, the
  // split being the slowest-varying index (Plan.kernel_out_shape).
  int rest = block / tiles;
  const int64_t matrix = rest;
  int64_t a_off = 0, b_off = 0;
  for (int i = nd - 1; i >= 0; --i) {
    const int extent = params[P_BATCH_SHAPE + i];
    const int idx = rest % extent;
    rest /= extent;
    if (a_shape[i] != 1) a_off += idx * a_strides[i];
    if (b_shape[i] != 1) b_off += idx * b_strides[i];
  }
  const int k_split = params[P_BATCH_SHAPE + nd];  // K itself when K is not split
  const int k0 = rest * k_split;
  t.k0 = k0;
  t.K = min(t.K - k0, k_split);
  a_off += k0 * a_strides[nd + 1];
  b_off += k0 * b_strides[nd];
  t.A = {a + a_off, a_strides[nd], a_strides[nd + 1], t.M, t.K};
  t.B = {b + b_off, b_strides[nd], b_strides[nd + 1], t.K, t.N};
  t.ldc = t.N;
  t.C = c + matrix * t.M * t.N;
  return t;
}

// Copy the ROWS x COLS tile of x at (r0, c0) into shared memory as smem[r][c]
// (row stride LD), zeros outside x, through registers. x has layout L: 16-byte
// loads along its rows, stored as they are, or down its columns, scattered into
// four rows of the tile; element by element where x's strides or the matrix
// edge do not allow 16 bytes. Consecutive threads take consecutive addresses of
// x, so loads coalesce.
template <int ROWS, int COLS, int LD, int THREADS, Layout L>
__device__ inline void load_tile(float* smem, const Operand& x, int r0, int c0) {
  static_assert(ROWS % 4 == 0 && COLS % 4 == 0 && LD % 4 == 0, "whole float4s");
  constexpr int VECTORS = ROWS * COLS / 4;
  static_assert(VECTORS % THREADS == 0, "every thread loads the same amount");
  const bool vector = x.vectorizes<L>();
#pragma unroll
  for (int j = 0; j < VECTORS / THREADS; ++j) {
    const int i = j * THREADS + threadIdx.x;
    if (L == ROW_MAJOR) {
      const int r = i / (COLS / 4), c = (i % (COLS / 4)) * 4;
      *reinterpret_cast<float4*>(smem + r * LD + c) = x.load4<L>(r0 + r, c0 + c, vector);
    } else {
      const int c = i / (ROWS / 4), r = (i % (ROWS / 4)) * 4;
      const float4 v = x.load4<L>(r0 + r, c0 + c, vector);
      smem[r * LD + c] = v.x;
      smem[(r + 1) * LD + c] = v.y;
      smem[(r + 2) * LD + c] = v.z;
      smem[(r + 3) * LD + c] = v.w;
    }
  }
}

// load_tile in two halves, for double buffering, for the k-tiles of an operand
// whose rows are k (the K x M view of A, B): the ROWS x COLS tiles at (k0, c0)
// for k0 = 0, ROWS, 2 ROWS, ... fetch() starts the global loads of a thread's
// share of one into registers, and the thread computes on the previous tile
// while they are in flight; store() then writes them to shared memory (only
// there does the thread wait for them).
//
// Which 4 elements a thread moves: 4 neighbours along x's contiguous direction,
// consecutive threads on consecutive addresses, so loads coalesce. A row-major x
// is copied one 16-byte store per load. A column-major x (a row-major A, or B a
// transposed view) is scattered into four rows of the tile, and there a warp
// takes 16 columns x 8 rows (two float4s of each column: one 32-byte sector)
// instead of load_tile's 4 columns x 32 rows. With a row stride LD = 4 (mod 8)
// the two float4s of a column land 16 banks apart (4 LD = 16 mod 32) and the 16
// columns fill the other banks: each of the 4 scattered stores is served in one
// pass. load_tile's mapping puts a warp's 8 float4s of a column onto 2 banks, a
// 4-way conflict, whatever the stride (as long as rows stay 16-byte aligned).
template <int ROWS, int COLS, int THREADS, Layout L>
struct KTileStager {
  static_assert(ROWS % 4 == 0 && COLS % 4 == 0, "whole float4s");
  static_assert(L == ROW_MAJOR || (ROWS % 8 == 0 && COLS % 16 == 0), "16 x 8 per warp");
  static constexpr int VECTORS = ROWS * COLS / 4 / THREADS;  // float4s per thread
  static_assert(VECTORS * 4 * THREADS == ROWS * COLS, "every thread moves the same amount");

  float4 v[VECTORS];

  // Top-left (r, c) of the thread's j-th float4 in the tile.
  __device__ static void slot(int j, int& r, int& c) {
    const int i = j * THREADS + threadIdx.x;
    if (L == ROW_MAJOR) {
      r = i / (COLS / 4);
      c = (i % (COLS / 4)) * 4;
    } else {
      const int lane = i % 32, warp = i / 32;
      c = (warp % (COLS / 16)) * 16 + lane % 16;
      r = (warp / (COLS / 16)) * 8 + (lane / 16) * 4;
    }
  }

  // Load the tile at (k0, c0), any tile: each float4 is checked against x's
  // edges (zeros outside), one 16-byte load where x allows it.
  __device__ void fetch(const Operand& x, int k0, int c0) {
    const bool vector = x.vectorizes<L>();
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
      int r, c;
      slot(j, r, c);
      v[j] = x.load4<L>(k0 + r, c0 + c, vector);
    }
  }

  // Tiles wholly inside x (all but the edge blocks' and a last partial
  // k-tile) are loaded by a plan made once, as CopyPlan does for cp.async:
  // the thread's float4 j of the tile at (k0, c0) lies at base + k0 * (k's
  // stride) + row_step(j) * (row stride) + col_step(j) * (column stride),
  // where base is its float4 0 at (0, c0), the steps are compile-time and one
  // of the two strides is 1 (the layout). An add per load, where the checked
  // fetch redoes the slot arithmetic and the bounds (and, in tile_threads'
  // out-of-line main loop, rereads x from memory): tile_threads 34.9 -> 36.4
  // TFLOP/s at 4096^3 on an H200.
  struct Plan {
    const float* base;
    int64_t stride;  // x's stride that is not 1: rs (row-major) or cs (column-major)
  };
  __device__ static Plan plan(const Operand& x, int c0) {
    int r, c;
    slot(0, r, c);
    return {x.p + r * x.rs + (c0 + c) * x.cs, L == ROW_MAJOR ? x.rs : x.cs};
  }
  // slot(j) - slot(0), the same for every thread (see slot: the threads'
  // first float4s tile whole rows, or whole 16 x 8 warp blocks, of the tile).
  static constexpr int WARPS = THREADS / 32, WARP_COLS = COLS / 16;
  static_assert(L == COL_MAJOR || THREADS % (COLS / 4) == 0, "j moves by whole rows");
  static_assert(L == ROW_MAJOR || (THREADS % 32 == 0 && WARP_COLS % WARPS == 0),
                "j moves by whole warp blocks");
  __host__ __device__ static constexpr int row_step(int j) {
    return L == ROW_MAJOR ? j * (THREADS / (COLS / 4)) : (j * WARPS / WARP_COLS) * 8;
  }
  __host__ __device__ static constexpr int col_step(int j) {
    return L == ROW_MAJOR ? 0 : (j * WARPS % WARP_COLS) * 16;
  }
  // Load the tile at (k0, c0) of a plan made for c0: a tile inside x, which
  // vectorizes along L.
  __device__ void fetch(const Plan& plan, int k0) {
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
      const float* p = L == ROW_MAJOR
                           ? plan.base + (k0 + row_step(j)) * plan.stride
                           : plan.base + (k0 + row_step(j)) + col_step(j) * plan.stride;
      v[j] = *reinterpret_cast<const float4*>(p);
    }
  }

  // Write the fetched tile to smem[r][c] (row stride LD).
  template <int LD>
  __device__ void store(float* smem) const {
    static_assert(LD % 4 == 0, "16-byte rows");
    static_assert(L == ROW_MAJOR || LD % 8 == 4, "conflict-free scatter (see above)");
#pragma unroll
    for (int j = 0; j < VECTORS; ++j) {
      int r, c;
      slot(j, r, c);
      if (L == ROW_MAJOR) {
        *reinterpret_cast<float4*>(smem + r * LD + c) = v[j];
      } else {
        smem[r * LD + c] = v[j].x;
        smem[(r + 1) * LD + c] = v[j].y;
        smem[(r + 2) * LD + c] = v[j].z;
        smem[(r + 3) * LD + c] = v[j].w;
      }
    }
  }
};

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

// A small-M block launched with a grid, thread count or shared memory that its
// template disagrees with would leave parts of C unwritten: it writes NaN over
// its tile instead, which no check can miss.
template <int BLOCK_M, int BN>
__device__ inline void write_nan_tile(const Tile& t) {
  for (int i = threadIdx.x; i < BLOCK_M * BN; i += blockDim.x) {
    const int r = t.row0 + i / BN, col = t.col0 + i % BN;
    if (r < t.M && col < t.N) t.C[r * t.ldc + col] = __int_as_float(0x7fc00000);
  }
}

// The small-M kernels' last step: `slots` partial sums of the block's C, each
// BLOCK_M x BN floats row-major, one after another in shared memory, added in
// order (the same order every run) and the block's first `rows` rows stored.
template <int BLOCK_M, int BN, int THREADS>
__device__ inline void store_slot_sums(const Tile& t, const float* slots, int used, int rows) {
  const bool c_aligned = t.ldc % 4 == 0 && is_16_byte_aligned(t.C);
  for (int i = threadIdx.x; i < rows * BN / 4; i += THREADS) {
    const float4* s = reinterpret_cast<const float4*>(slots) + i;
    float4 sum = s[0];
    for (int q = 1; q < used; ++q) {
      const float4 v = s[q * BLOCK_M * BN / 4];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    store4_clipped(t.C, t.ldc, t.row0 + i / (BN / 4), t.col0 + 4 * (i % (BN / 4)), t.M, t.N,
                   c_aligned, sum);
  }
}

// A compile-time bool as a type, for main loops compiled once per runtime case
// (as LayoutTag does for layouts): with_flag(x, f) runs f(BoolTag<x>{}).
template <bool V>
struct BoolTag {
  static constexpr bool value = V;
};

template <typename F>
__device__ inline void with_flag(bool flag, F&& f) {
  if (flag) f(BoolTag<true>{});
  else f(BoolTag<false>{});
}

// One halving step of warp_sum_spread on v[0 .. N): the N / 2 values kept
// land in v[0 .. N / 2). A compile-time recursion, so that every index is a
// constant: as a loop over N, nvcc left the inner loop rolled and v in local
// memory (a stack frame in small_m and small_m_wide).
template <int N, int V>
__device__ inline void warp_halve(float (&v)[V], int offset) {
  if constexpr (N > 1) {
    const bool upper = threadIdx.x & offset;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const float send = upper ? v[i] : v[i + N / 2];
      const float keep = upper ? v[i + N / 2] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, offset);
    }
    warp_halve<N / 2>(v, offset / 2);
  }
}

// Sum V values (a power of 2 up to 32) over the 32 lanes of a warp, in 31
// shuffles for V = 32 rather than V * 5: each halving step keeps one half of
// the values and trades the other half with the partner lane. Returns the total
// of v[lane / (32 / V)] (V = 32: lane i holds the sum of v[i]); v is clobbered.
template <int V>
__device__ inline float warp_sum_spread(float (&v)[V]) {
  static_assert(V >= 1 && V <= 32 && (V & (V - 1)) == 0, "V a power of 2, at most 32");
  warp_halve<V>(v, 16);
  float sum = v[0];
#pragma unroll
  for (int offset = 16 / V; offset >= 1; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  return sum;
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
// output tile starts at (wm0, wn0) of the block. As holds the block's BM x BK
// tile of A, Bs the BK x BN tile of B, laid out as ATile / BTile (SmemTile:
// either orientation). With the padded strides a warp's fragment reads (8 rows
// x 4 columns of A, 4 x 8 of B) hit 32 different banks in either orientation.
//
// SPLIT selects 3xTF32 (float32 accuracy). The tensor cores add into their
// accumulator rounding toward zero, so letting them accumulate over all of K
// biases every step the same way and the error grows with K (measured on an
// H200: 25x cuBLAS SGEMM's at K = 4096). So the k-tile's products go into a
// fresh accumulator `part`, which the FP32 units, rounding to nearest, add to
// `acc` (after Ootomo & Yokota, 2022). Without SPLIT: one TF32 product per step,
// accumulated by the tensor cores, like cuBLAS's TF32 mode.
template <int MI, int NI, int BK, typename ATile, typename BTile, bool SPLIT>
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
      const int r = wm0 + i * 16 + g, k = kk + tg;
      const float v[4] = {ATile::at(As, r, k), ATile::at(As, r + 8, k),
                          ATile::at(As, r, k + 4), ATile::at(As, r + 8, k + 4)};
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
      const int k = kk + tg, col = wn0 + j * 8 + g;
      uint32_t b_big[2], b_big_finite[2], b_small[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float v = BTile::at(Bs, k + 4 * e, col);
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

// Row stride of a shared-memory tile whose contiguous extent is EXTENT floats:
// padded so that the warps' fragment reads hit 32 different banks (see
// warp_tile_mma), and 16-byte rows for cp.async.
template <int EXTENT>
__host__ __device__ constexpr int padded() {
  return EXTENT + (EXTENT >= 64 ? 8 : 4);
}

// One 16-byte copy into a shared-memory tile: the 4 operand elements from
// tile-relative (r, c) along the operand's contiguous direction, to the tile's
// float offset `smem`.
struct Chunk {
  int r, c, smem;
};

// A ROWS x COLS tile of an operand with layout L as cp.async leaves it in shared
// memory: in the operand's own orientation (a copy cannot transpose), so
// row-major as smem[r][c] and column-major as smem[c][r].
template <Layout L, int ROWS, int COLS>
struct SmemTile {
  static constexpr int LD = L == ROW_MAJOR ? padded<COLS>() : padded<ROWS>();
  static constexpr int FLOATS = L == ROW_MAJOR ? ROWS * LD : COLS * LD;
  // Room for the tile in either orientation.
  static constexpr int MAX_FLOATS = ROWS * padded<COLS>() > COLS * padded<ROWS>()
                                        ? ROWS * padded<COLS>() : COLS * padded<ROWS>();
  __device__ static float at(const float* s, int r, int c) {
    return L == ROW_MAJOR ? s[r * LD + c] : s[c * LD + r];
  }
  // The 16-byte chunk i of the tile (see Chunk): consecutive chunks run along
  // the operand's contiguous direction, so consecutive threads copy
  // consecutive addresses.
  static constexpr int LINE = L == ROW_MAJOR ? COLS : ROWS;  // contiguous extent
  static constexpr int LINE_CHUNKS = LINE / 4;  // chunk i + LINE_CHUNKS: the next line
  __device__ static Chunk chunk(int i) {
    const int line = i / (LINE / 4), pos = (i % (LINE / 4)) * 4;
    return L == ROW_MAJOR ? Chunk{line, pos, line * LD + pos} : Chunk{pos, line, line * LD + pos};
  }
};

// Start copying the 4 neighbours of (r, c) in direction L (along a row / down
// a column) into smem[0..3], zeros outside x: one 16-byte copy when x
// vectorizes in that direction (`vector`, with r or c a multiple of 4), a
// partial one at the matrix's edge; else 4-byte copies. The tile copies below
// use it for their 16-byte chunks; small_m for each of its float4s.
template <Layout L>
__device__ inline void cp_async_float4(float* smem, const Operand& x, int r, int c, bool vector) {
  const int dr = L == COL_MAJOR, dc = L == ROW_MAJOR;
  const bool line = L == ROW_MAJOR ? r < x.rows : c < x.cols;  // the row (column) exists
  const int valid = line ? max(0, min(4, L == ROW_MAJOR ? x.cols - c : x.rows - r)) : 0;
  if (vector) {
    cp_async<16>(smem, valid ? &x.p[r * x.rs + c * x.cs] : x.p, 4 * valid);
    return;
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const bool in = e < valid;
    cp_async<4>(smem + e, in ? &x.p[(r + e * dr) * x.rs + (c + e * dc) * x.cs] : x.p, in ? 4 : 0);
  }
}

// Start copying the ROWS x COLS tile of x at (r0, c0) into shared memory
// (laid out as SmemTile<L, ROWS, COLS>), zeros outside x. With 16-byte aligned
// rows (columns): one 16-byte copy per 4 elements, a partial one at the edge.
// Otherwise (odd strides): 4-byte copies, consecutive threads walking x's
// contiguous direction.
template <int ROWS, int COLS, int THREADS, Layout L>
__device__ inline void cp_async_tile(float* smem, const Operand& x, int r0, int c0) {
  using Tile = SmemTile<L, ROWS, COLS>;
  constexpr bool ROW = L == ROW_MAJOR;
  constexpr int LINE = Tile::LINE;  // contiguous extent of the tile
  constexpr int VECTORS = ROWS * COLS / 4;
  static_assert(VECTORS % THREADS == 0, "every thread copies the same amount");
  if (x.vectorizes<L>()) {
#pragma unroll
    for (int j = 0; j < VECTORS / THREADS; ++j) {
      const Chunk ch = Tile::chunk(j * THREADS + threadIdx.x);
      cp_async_float4<L>(smem + ch.smem, x, r0 + ch.r, c0 + ch.c, true);
    }
  } else {
#pragma unroll 1  // rolled: unrolled, the addresses would stay live in registers
    for (int i = threadIdx.x; i < ROWS * COLS; i += THREADS) {
      const int line = i / LINE, pos = i % LINE;
      const int gr = r0 + (ROW ? line : pos), gc = c0 + (ROW ? pos : line);
      const bool valid = gr < x.rows && gc < x.cols;
      cp_async<4>(smem + line * Tile::LD + pos, valid ? &x.p[gr * x.rs + gc * x.cs] : x.p,
                  valid ? 4 : 0);
    }
  }
}

// ---------------------------------------------------------------------------
// Hopper warpgroup MMA (wgmma, sm_90a). A warpgroup (4 consecutive warps, 128
// threads) multiplies a 64 x 8 TF32 tile held in its registers by an 8 x N tile
// that the tensor cores read straight from shared memory, asynchronously: the
// threads issue a batch of products, may do other work, then wait for it. One
// m64n128k8 product is 16 times the work of an mma.sync m16n8k8 for one issue
// slot, which is what lifts the tensor cores off the instruction-issue limit
// of the mma.sync kernels (benchmarks/NOTES.md).
// ---------------------------------------------------------------------------

// A ROWS x BK tile (BK = 32) in the layout wgmma reads from shared memory
// with the 128-byte swizzle. Its k runs fastest, as TF32 wgmma requires for the
// shared-memory operand ("K-major"; only 16-bit types may be transposed): row
// r is 128 contiguous bytes, its 16-byte chunk c stored in slot c ^ (r % 8);
// 8 rows make a 1024-byte atom (SBO), and the tile must start 1024-byte
// aligned. Element (r, k) is at offset(r, k). Why the swizzle (measured on an
// H200 against the unswizzled "core matrix" layout: 1.1x float32, 1.8x TF32):
// a warp copies 4 whole rows of the operand, whole 128-byte lines, half the
// L2 requests of the 8 rows x 64 bytes a core-matrix copy takes (TF32 was
// bound by the L2's tag lookups, 88% busy), and each 8 lanes writing one row
// hit 8 different slots (no bank conflicts).
template <int ROWS, int BK>
struct SwizzledTile {
  static_assert(ROWS % 8 == 0 && BK == 32, "8-row atoms of 128-byte rows");
  static constexpr int FLOATS = ROWS * BK;
  static constexpr int LBO = 16;     // unused with a swizzle along K (one atom wide)
  static constexpr int SBO = 1024;   // bytes between 8-row atoms
  static constexpr uint64_t LAYOUT = 1;  // descriptor layout type: 128-byte swizzle
  __device__ static int offset(int r, int k) {
    return r * BK + (((k / 4) ^ (r % 8)) * 4) + k % 4;
  }
  static constexpr int LINE_CHUNKS = BK / 4;  // chunk i + LINE_CHUNKS: the next row
  __device__ static Chunk chunk(int i) {
    const int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
    return {r, c, offset(r, c)};
  }
};

// Start copying the ROWS x BK tile of x at (r0, k0) into a SwizzledTile,
// zeros outside x: 16-byte copies when x has layout L = ROW_MAJOR with 16-byte
// aligned rows (the k-major tile is then x's own orientation), else 4-byte
// copies with consecutive threads walking x's contiguous direction (a
// transposed view is transposed on the way in).
template <int ROWS, int BK, int THREADS, Layout L>
__device__ inline void cp_async_swizzled_tile(float* smem, const Operand& x, int r0, int k0) {
  using Tile = SwizzledTile<ROWS, BK>;
  constexpr int VECTORS = ROWS * BK / 4;
  static_assert(VECTORS % THREADS == 0, "every thread copies the same amount");
  if (L == ROW_MAJOR && x.vectorizes<ROW_MAJOR>()) {
#pragma unroll 1  // edge tiles only (tile_wgmma copies the others by a CopyPlan): rolled, no addresses kept live
    for (int j = 0; j < VECTORS / THREADS; ++j) {
      const Chunk ch = Tile::chunk(j * THREADS + threadIdx.x);
      cp_async_float4<ROW_MAJOR>(smem + ch.smem, x, r0 + ch.r, k0 + ch.c, true);
    }
  } else {
#pragma unroll 1  // rolled: unrolled, the addresses would stay live in registers
    for (int i = threadIdx.x; i < ROWS * BK; i += THREADS) {
      const int r = L == COL_MAJOR ? i % ROWS : i / BK, k = L == COL_MAJOR ? i / ROWS : i % BK;
      const bool valid = r0 + r < x.rows && k0 + k < x.cols;
      cp_async<4>(smem + Tile::offset(r, k), valid ? &x.p[(r0 + r) * x.rs + (k0 + k) * x.cs] : x.p,
                  valid ? 4 : 0);
    }
  }
}

// The 16-byte copies one thread makes of every k-tile of a tile that lies
// wholly inside its operand (Tile: SmemTile or SwizzledTile), worked out
// once: copy j of k-tile kt reads src + kt * k_step + j * j_step and writes
// smem + j * smem_step of the stage. Chunk j + 1 of a thread is chunk j moved
// by THREADS chunks, the same move for every j (whole lines of the tile per
// step), so two strides say it all. The general copy spends ~30
// instructions of index arithmetic and bounds checks per copy; this, ~3
// (measured with ncu on tile_wgmma: its producer warps issued ~700
// instructions per k-tile, ~470 of them for 16 copies, and the consumers
// waited for them).
struct CopyPlan {
  const float* src;
  int64_t j_step, k_step;  // elements
  int smem, smem_step;     // floats

  template <typename Tile, int THREADS>
  __device__ static CopyPlan of(const Operand& x, int r0, int c0, int64_t k_step) {
    static_assert(THREADS % Tile::LINE_CHUNKS == 0, "each step moves by whole lines");
    const Chunk first = Tile::chunk(threadIdx.x), next = Tile::chunk(threadIdx.x + THREADS);
    auto address = [&](const Chunk& ch) { return x.p + (r0 + ch.r) * x.rs + (c0 + ch.c) * x.cs; };
    return {address(first), address(next) - address(first), k_step, first.smem,
            next.smem - first.smem};
  }

  template <int COPIES>
  __device__ void copy(float* stage, int kt) const {
    const float* s = src + kt * k_step;
#pragma unroll
    for (int j = 0; j < COPIES; ++j) cp_async<16>(stage + smem + j * smem_step, s + j * j_step, 16);
  }
};

// The 3xTF32 split for operands on their way to the tensor cores: big = x
// rounded to TF32 and small = x - big rounded to TF32, both to nearest (ties
// away), so |small| <= 2^-11 |x| and the dropped small * small term stays
// below float32's rounding. Integer arithmetic on the bits, no checks: a
// non-finite x, or a big that rounds up to Inf, makes `probe` NaN (Inf * 0),
// and the caller then recomputes what they touch exactly.
__device__ inline float tf32_rounded(float x) {
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}
__device__ inline void split_tf32_fast(float x, float& big, float& small, float& probe) {
  big = tf32_rounded(x);
  small = tf32_rounded(x - big);
  probe = fmaf(big, 0.0f, probe);
}

// Named barriers (ids 1..15; 0 is __syncthreads) between the warps of one
// block: `arrive` counts this warp in and goes on, `sync` counts it in and
// waits until `threads` threads have. A producer arrives, consumers sync.
__device__ inline void barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
__device__ inline void barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}

// Hand registers between the warpgroups of a block (sm_90a): a warpgroup that
// needs few gives some back, one that needs many takes them. Takes effect
// only under a register cap at entry (__launch_bounds__, see SGEMM_MIN_BLOCKS).
template <int REGS>
__device__ inline void registers_decrease() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(REGS));
}
template <int REGS>
__device__ inline void registers_increase() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(REGS));
}

// The 64-bit descriptor of a SwizzledTile's k8 slice starting at `p`: its
// shared-memory address, LBO and SBO (each in 16-byte units), the swizzle.
template <typename Tile>
__device__ inline uint64_t wgmma_descriptor(const float* p) {
  const uint64_t address = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return ((address & 0x3ffff) >> 4) | (uint64_t((Tile::LBO & 0x3ffff) >> 4) << 16) |
         (uint64_t((Tile::SBO & 0x3ffff) >> 4) << 32) | (Tile::LAYOUT << 62);
}

// Shared memory written by ordinary stores (or cp.async) is read by wgmma
// through the "async proxy": each writing thread fences before the barrier
// that publishes the tile.
__device__ inline void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Registers that a wgmma reads or accumulates into must be written before this
// fence; the products' results may be read only after wgmma_wait.
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>  // until at most N committed batches are still running
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}

// d (64 x N, float32) = a (64 x 8, TF32) * b (8 x N, TF32 in shared memory,
// K-major, described by b_desc) + (accumulate ? d : 0), for the widths
// tile_wgmma uses (N = its BM). a comes from registers (wgmma_tf32) or from
// shared memory, K-major too, described by a_desc (wgmma_tf32_ss). Register
// fragments are those of mma.sync m16n8k8 (see mma_m16n8k8_tf32), warp w of
// the warpgroup holding rows 16w..16w+15: a0 (g, t), a1 (g+8, t), a2 (g, t+4),
// a3 (g+8, t+4); d[4j + e] is row g + 8 (e / 2), column 8j + 2t + e % 2.
#define SGEMM_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                    "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define SGEMM_D16 SGEMM_D8(0), SGEMM_D8(8)
#define SGEMM_D32 SGEMM_D16, SGEMM_D8(16), SGEMM_D8(24)
#define SGEMM_D64 SGEMM_D32, SGEMM_D8(32), SGEMM_D8(40), SGEMM_D8(48), SGEMM_D8(56)
#define SGEMM_D128 SGEMM_D64, SGEMM_D8(64), SGEMM_D8(72), SGEMM_D8(80), SGEMM_D8(88), \
                   SGEMM_D8(96), SGEMM_D8(104), SGEMM_D8(112), SGEMM_D8(120)
// The N / 2 accumulators' operand numbers, as the instruction lists them.
#define SGEMM_ACC16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define SGEMM_ACC32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define SGEMM_ACC64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define SGEMM_ACC128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// One wgmma: N, the operand number of `accumulate`, the accumulators, and
// the a and b operands.
#define SGEMM_WGMMA(N, ACCUMULATE, D, AB)                                        \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " ACCUMULATE ", 0;\n"                     \
  "wgmma.mma_async.sync.aligned.m64n" N "k8.f32.tf32.tf32 " D ", " AB ", p, 1, 1;\n}\n"
#define SGEMM_RS_INPUTS "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(int(accumulate))
#define SGEMM_SS_INPUTS "l"(a_desc), "l"(b_desc), "r"(int(accumulate))
template <int N>
__device__ inline void wgmma_tf32(
    float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b_desc, bool accumulate) {
  static_assert(N == 32 || N == 64 || N == 128 || N == 256, "m64n32k8 ... m64n256k8");
  if constexpr (N == 256) {
    asm volatile(SGEMM_WGMMA("256", "%133", SGEMM_ACC128, "{%128, %129, %130, %131}, %132")
                 : SGEMM_D128 : SGEMM_RS_INPUTS);
  } else if constexpr (N == 128) {
    asm volatile(SGEMM_WGMMA("128", "%69", SGEMM_ACC64, "{%64, %65, %66, %67}, %68")
                 : SGEMM_D64 : SGEMM_RS_INPUTS);
  } else if constexpr (N == 64) {
    asm volatile(SGEMM_WGMMA("64", "%37", SGEMM_ACC32, "{%32, %33, %34, %35}, %36")
                 : SGEMM_D32 : SGEMM_RS_INPUTS);
  } else {
    asm volatile(SGEMM_WGMMA("32", "%21", SGEMM_ACC16, "{%16, %17, %18, %19}, %20")
                 : SGEMM_D16 : SGEMM_RS_INPUTS);
  }
}
template <int N>
__device__ inline void wgmma_tf32_ss(float (&d)[N / 2], uint64_t a_desc, uint64_t b_desc, bool accumulate) {
  static_assert(N == 32 || N == 64 || N == 128 || N == 256, "m64n32k8 ... m64n256k8");
  if constexpr (N == 256) {
    asm volatile(SGEMM_WGMMA("256", "%130", SGEMM_ACC128, "%128, %129") : SGEMM_D128 : SGEMM_SS_INPUTS);
  } else if constexpr (N == 128) {
    asm volatile(SGEMM_WGMMA("128", "%66", SGEMM_ACC64, "%64, %65") : SGEMM_D64 : SGEMM_SS_INPUTS);
  } else if constexpr (N == 64) {
    asm volatile(SGEMM_WGMMA("64", "%34", SGEMM_ACC32, "%32, %33") : SGEMM_D32 : SGEMM_SS_INPUTS);
  } else {
    asm volatile(SGEMM_WGMMA("32", "%18", SGEMM_ACC16, "%16, %17") : SGEMM_D16 : SGEMM_SS_INPUTS);
  }
}
#undef SGEMM_RS_INPUTS
#undef SGEMM_SS_INPUTS
#undef SGEMM_WGMMA
#undef SGEMM_ACC16
#undef SGEMM_ACC32
#undef SGEMM_ACC64
#undef SGEMM_ACC128
#undef SGEMM_D16
#undef SGEMM_D32
#undef SGEMM_D64
#undef SGEMM_D128
#undef SGEMM_D8

// ---------------------------------------------------------------------------
// The tensor memory accelerator (TMA, sm_90). One thread asks for a whole box
// of a 2-D array; the TMA copies it into shared memory (here in wgmma's
// 128-byte swizzle, zeros outside the array) and counts its bytes on a
// transaction barrier (mbarrier) there; a thread that waits on the barrier
// then sees them. Against cp.async: no per-thread copies (tile_wgmma's
// producer issued ~500 instructions a k-tile for them), and the L2 is asked
// for whole boxes. The copy needs a 128-byte descriptor, the tensor map, that
// the CUDA driver makes (cuTensorMapEncodeTiled): mlx_sgemm/tensormap.py
// makes one per shape with a stand-in address and hands it over in `params`
// (MLX passes arrays, whose addresses Python does not see); each block
// writes its operand's address in (in shared memory) and copies the map to a
// global slot of its own, where the TMA reads it.
// ---------------------------------------------------------------------------

// Where the tensor maps (A's, B's in panels, B^T's; 32 words each) start in `params`
// (after the batch shape and the split length: mlx_sgemm/problem.py).
constexpr int P_TENSOR_MAPS = 16;
constexpr int TENSOR_MAP_WORDS = 32;

__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// A transaction barrier that completes a phase when `arrivals` threads have
// arrived and every byte announced has landed.
__device__ inline void mbarrier_init(uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(shared_address(bar)), "r"(arrivals));
}
// Makes barrier initialisations visible to the TMA (then a block barrier).
__device__ inline void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Arrive, announcing `bytes` more to come by TMA in the current phase.
__device__ inline void mbarrier_arrive_expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
               :: "r"(shared_address(bar)), "r"(bytes) : "memory");
}
// Wait for the phase of parity `parity` to complete (phases alternate 0, 1,
// 0, ...: the n-th use of a stage of a ring waits with parity n % 2).
__device__ inline void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n"
      :: "r"(shared_address(bar)), "r"(parity) : "memory");
}

// Whether `params` carries a tensor map at `words` (the host writes zeros
// where it made none: no driver, or rows not 16-byte aligned). A map's first
// word is its (stand-in) address, never 0.
__device__ inline bool has_tensor_map(const int32_t* words) { return (words[0] | words[1]) != 0; }

// Warp-wide (all 32 lanes): the map at `words` with `address` written in,
// copied to the 128-byte global slot `slot` through the 128-byte aligned
// shared buffer `scratch`, and made visible to this warp's TMA copies.
__device__ inline void make_tensor_map(void* slot, uint4* scratch, const int32_t* words, const void* address) {
  const int lane = threadIdx.x % 32;
  if (lane < 8) scratch[lane] = reinterpret_cast<const uint4*>(words)[lane];
  __syncwarp();
  if (lane == 0) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;\n"
                 :: "r"(shared_address(scratch)), "l"(address) : "memory");
  }
  __syncwarp();
  asm volatile(
      "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;\n"
      :: "l"(slot), "r"(shared_address(scratch)) : "memory");
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" :: "l"(slot) : "memory");
}

// Copy the box at (x, y) (x the map's fastest dimension) of the map at `map`
// into shared memory at `smem` (1024-byte aligned for the 128-byte swizzle),
// its bytes counted on `bar`.
__device__ inline void tma_load_2d(float* smem, const void* map, int x, int y, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      :: "r"(shared_address(smem)), "l"(map), "r"(x), "r"(y), "r"(shared_address(bar)) : "memory");
}

// A K x N tile of a row-major B (k rows of N floats) as the TMA lays it out in
// 128-byte-swizzled boxes of 32 columns: BN / 32 panels, each a
// SwizzledTile<BK, 32> whose rows are k. Element (k, n) is at offset(k, n).
// Read as the register operand of tile_wgmma (B^T's fragments: lanes g take 8
// columns n, lanes t 4 rows k), bank conflicts are avoided by the choice of
// columns, fragment_column below.
template <int BK, int BN>
struct SwizzledPanels {
  static_assert(BN % 32 == 0, "whole 128-byte panels");
  using Panel = SwizzledTile<BK, 32>;
  static constexpr int FLOATS = BK * BN;
  __device__ static int offset(int k, int n) { return (n / 32) * Panel::FLOATS + Panel::offset(k, n % 32); }
  __device__ static float at(const float* s, int k, int n) { return s[offset(k, n)]; }
  // Which of the 64 columns (of a consumer warpgroup's) fragment row r holds,
  // r = 16 w + 8 h + g (warp w, half h, lane group g): columns 16 (g / 4) + g % 4
  // of a panel, moved by 4 (2 (w % 2) + h). One load of a warp then reads 4
  // rows k (4 slots of one 4-slot group after the swizzle) x 8 columns in 2
  // groups x 4 words: 32 banks. (Consecutive columns would read each bank twice.)
  __device__ static int fragment_column(int r) {
    const int w = r / 16, h = (r / 8) % 2, g = r % 8;
    return 32 * (w / 2) + 16 * (g / 4) + 4 * (2 * (w % 2) + h) + g % 4;
  }
};

// One of two types by a compile-time condition (NVRTC has no <type_traits>).
template <bool C, typename T, typename F>
struct Choose {
  using type = T;
};
template <typename T, typename F>
struct Choose<false, T, F> {
  using type = F;
};

// How tile_wgmma keeps a k-tile of B (K x N, layout BL) in shared memory. With
// the TMA (row-major operands described by tensor maps): a row-major B in the
// TMA's swizzled panels, read into registers as B^T's fragments; a transposed
// view (x @ W.T) as B^T's BN rows in a SwizzledTile, K-major like A's, read by
// descriptor. Without: a padded SmemTile in B's own layout, read as fragments.
// The same whichever way the tile was copied (a B the maps do not describe is
// copied by cp.async into the same layout).
template <bool TMA, Layout BL, int BK, int BN>
struct WgmmaBStage {
  static constexpr bool PANELS = TMA && BL == ROW_MAJOR;
  static constexpr bool BY_DESCRIPTOR = TMA && BL == COL_MAJOR;
  using Tile = typename Choose<PANELS, SwizzledPanels<BK, BN>,
                               typename Choose<BY_DESCRIPTOR, SwizzledTile<BN, BK>, SmemTile<BL, BK, BN>>::type>::type;
};

// A compile-time int as a type (as BoolTag for bools): small_m's rows of C.
template <int N>
struct IntTag {
  static constexpr int value = N;
};

// f(IntTag<R>{}) for the least R in 1, 2, 4, ..., MAX_ROWS that holds `rows`
// rows of C (the small-M kernels): each count compiled with just its FMAs.
template <int MAX_ROWS, typename F>
__device__ inline void with_rows_of_c(int rows, F&& f) {
  if (rows == 1 || MAX_ROWS == 1) f(IntTag<1>{});
  else if (rows == 2 || MAX_ROWS == 2) f(IntTag<2>{});
  else if (rows <= 4 || MAX_ROWS == 4) f(IntTag<(MAX_ROWS < 4 ? MAX_ROWS : 4)>{});
  else f(IntTag<MAX_ROWS>{});
}

// The dynamic shared memory this block was launched with, in bytes.
__device__ inline uint32_t dynamic_shared_bytes() {
  uint32_t bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;\n" : "=r"(bytes));
  return bytes;
}

}  // namespace sgemm

#endif  // MLX_SGEMM_CUH
