// k-tiles split into their 3xTF32 parts, laid out for ldmatrix fragment loads
// (SplitTile), and the copy that fills them, a thread's share at a time, from device
// memory or from a tile landed in shared memory (SplitTileStager).
#ifndef MLX_SGEMM_SPLIT_TILE_CUH
#define MLX_SGEMM_SPLIT_TILE_CUH

#include "ldmatrix.cuh"
#include "operand.cuh"
#include "smem_tile.cuh"
#include "tf32.cuh"

namespace sgemm {

// A LINES x BK k-tile of one operand, seen as lines of k: rows of A, columns of
// B. Every element is held split (sgemm::split_tf32_fast): a line holds its BK
// big parts, then its BK small parts, k contiguous, in 16-byte chunks of 4 k.
// An m16n8k8 fragment is then 4 (A) or 2 (B) 8-line x 4-k matrices, which one
// ldmatrix_x4 per fragment (A) or per big and small pair (B) loads straight
// into the registers mma.sync reads (sgemm::warp_tile_mma_split).
//
// Chunk q of line l lies at q ^ (l % 8): the 8 lines of a matrix, read in one
// pass, lie in 8 different 16-byte bank groups; so do the chunks that
// SplitTileStager stores at once (8 lines' chunk of the same k; or 2 lines
// 4 apart x 8 pairs of k, 8 bytes each).
template <int LINES, int BK>
struct SplitTile {
  static_assert(BK % 16 == 0 && LINES % 8 == 0, "whole swizzle rows, whole fragments");
  static constexpr int LINE_FLOATS = 2 * BK;  // big parts, then small parts
  static constexpr int FLOATS = LINES * LINE_FLOATS;

  // Float offset of element k of `line`, its big part or its small part.
  __host__ __device__ static constexpr int offset(int line, int k, bool small) {
    return line * LINE_FLOATS + 4 * ((k / 4 + (small ? BK / 4 : 0)) ^ (line % 8)) + k % 4;
  }
};

// One thread's share of filling a SplitTile<LINES, BK>: its units, each two
// runs of 4 elements of the operand, fetched into registers (fetch) and then
// split into the tile (store). The runs lie along the operand's contiguous
// direction (L, of the LINES x K view: ROW_MAJOR when k is contiguous), so
// that each is one 16-byte load:
//   ROW_MAJOR: line l, k = 8c .. 8c + 3 and 8c + 4 .. 8c + 7, stored as a
//     chunk of big and one of small parts each (16-byte stores); consecutive
//     threads take consecutive lines (32-byte sectors).
//   COL_MAJOR: lines 4j .. 4j + 3 at k = 2p and 2p + 1, stored as a pair of
//     k of each line, big and small (8-byte stores); 16 consecutive threads
//     take 8 pairs p of 2 runs j (32-byte sectors).
// Elements of type T stay so in registers until store() (Operand::Vec4: half
// the registers for halves) and become float32 there: converted in fetch(),
// the conversion would wait there for the loads it is meant to overlap.
template <Layout L, int LINES, int BK, int THREADS, typename T = float>
struct SplitTileStager {
  using Tile = SplitTile<LINES, BK>;
  using Vec4 = typename Operand<T>::Vec4;
  static constexpr int UNITS = LINES * BK / 8 / THREADS;
  static_assert(UNITS * THREADS * 8 == LINES * BK, "every thread moves the same amount");
  static constexpr int NEXT = L == ROW_MAJOR ? 4 : 1;  // the second run's k, from the first's

  Vec4 v[UNITS][2];  // unit j's runs at (line, k) and (line, k + NEXT)

  // First element (line, k) of the thread's unit j.
  __host__ __device__ static void unit(int j, int thread, int& line, int& k) {
    const int u = j * THREADS + thread;
    if (L == ROW_MAJOR) {
      line = u % LINES;
      k = 8 * (u / LINES);
    } else {
      line = 4 * (u / (BK / 2));
      k = 2 * (u % (BK / 2));
    }
  }

  // The thread's units of the tile whose first line is line0 and first k is
  // k0 in x (a LINES x K view), zeros outside x. INSIDE: the caller knows
  // the k-tile lies wholly inside x, which vectorizes (lines_inside, and
  // k0 + BK <= x.cols): plain 16-byte loads, nothing checked. (A loading
  // warpgroup gains with it; warps that also multiply, at the register
  // limit, lost: 36.1 -> 33.7 TFLOP/s at 4096^3 on an H100;
  // docs/performance-log.md.)
  template <bool INSIDE = false>
  __device__ void fetch(const Operand<T>& x, int line0, int k0) {
    const bool vector = x.template vectorizes<L>();
#pragma unroll
    for (int j = 0; j < UNITS; ++j) {
      int line, k;
      unit(j, threadIdx.x, line, k);
      if (INSIDE) {
        v[j][0] = x.template load4_inside<L>(line0 + line, k0 + k);
        v[j][1] = x.template load4_inside<L>(line0 + line, k0 + k + NEXT);
      } else {
        v[j][0] = x.template load4_raw<L>(line0 + line, k0 + k, vector);
        v[j][1] = x.template load4_raw<L>(line0 + line, k0 + k + NEXT, vector);
      }
    }
  }

  // Does x hold the tile's lines from line0, each run one aligned load
  // (vectorizes)? Then its k-tiles wholly inside can be read by fetch<true>.
  __device__ static bool lines_inside(const Operand<T>& x, int line0) {
    return x.template vectorizes<L>() && line0 + LINES <= x.rows;
  }

  // The thread's units of a tile landed in shared memory, element (line, k)
  // at tile[offset(line, k)], each run one 16-byte load (16-byte aligned
  // along L: an SmemTile in the operand's own orientation).
  template <typename Offset>
  __device__ void fetch(const float* tile, Offset offset) {
    static_assert(sizeof(Vec4) == sizeof(float4), "tiles in shared memory hold float32");
#pragma unroll
    for (int j = 0; j < UNITS; ++j) {
      int line, k;
      unit(j, threadIdx.x, line, k);
      v[j][0] = *reinterpret_cast<const float4*>(tile + offset(line, k));
      v[j][1] = *reinterpret_cast<const float4*>(tile + offset(line, k + NEXT));
    }
  }

  // Split the fetched units into `tile` (`probe` turns NaN on Inf or NaN).
  __device__ void store(float* tile, float& probe) const {
#pragma unroll
    for (int j = 0; j < UNITS; ++j) {
      int line, k;
      unit(j, threadIdx.x, line, k);
      float4 big[2], small[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) split_tf32_fast4(Element<T>::to_float4(v[j][r]), big[r], small[r], probe);
      if (L == ROW_MAJOR) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          *reinterpret_cast<float4*>(tile + Tile::offset(line, k + 4 * r, false)) = big[r];
          *reinterpret_cast<float4*>(tile + Tile::offset(line, k + 4 * r, true)) = small[r];
        }
      } else {
        const float b0[4] = {big[0].x, big[0].y, big[0].z, big[0].w};
        const float b1[4] = {big[1].x, big[1].y, big[1].z, big[1].w};
        const float s0[4] = {small[0].x, small[0].y, small[0].z, small[0].w};
        const float s1[4] = {small[1].x, small[1].y, small[1].z, small[1].w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          *reinterpret_cast<float2*>(tile + Tile::offset(line + e, k, false)) = make_float2(b0[e], b1[e]);
          *reinterpret_cast<float2*>(tile + Tile::offset(line + e, k, true)) = make_float2(s0[e], s1[e]);
        }
      }
    }
  }
};

// Split a k-tile landed in shared memory by copies (A's SmemTile<AL, BM, BK>,
// then B's SmemTile<BL, BK, BN> B_OFFSET floats on) into a stage of split
// tiles (SplitTile of A, then of B^T), each of THREADS threads its share: A's
// runs, then B's, so that one operand's are in registers at a time.
template <Layout AL, Layout BL, int BM, int BN, int BK, int THREADS, int B_OFFSET>
__device__ inline void split_landed_k_tile(const float* landed, float* into, float& probe) {
  using ATile = SmemTile<AL, BM, BK>;
  using BTile = SmemTile<BL, BK, BN>;
  // B's split tiles hold B^T (lines of k): the B tile's element (k, n) is
  // element (n, k) of the N x K view, whose layout is the other one.
  constexpr Layout BT = BL == ROW_MAJOR ? COL_MAJOR : ROW_MAJOR;
  {
    SplitTileStager<AL, BM, BK, THREADS> a;
    a.fetch(landed, [](int m, int k) { return ATile::offset(m, k); });
    a.store(into, probe);
  }
  SplitTileStager<BT, BN, BK, THREADS> b;
  b.fetch(landed + B_OFFSET, [](int n, int k) { return BTile::offset(k, n); });
  b.store(into + SplitTile<BM, BK>::FLOATS, probe);
}

}  // namespace sgemm

#endif  // MLX_SGEMM_SPLIT_TILE_CUH
