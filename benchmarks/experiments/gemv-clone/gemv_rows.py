"""a warp per row of W for M tokens (x @ W.T), bfloat16, beside
ops.matmul (half_gemv) and mx.matmul, for ncu.
    python benchmarks/experiments/gemv-clone/gemv_rows.py M N K"""
import sys
import mlx.core as mx
from mlx_sgemm import ops

SRC = r"""
constexpr int WARPS = 8, NPT = 8;
const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int N = w_shape[0], K = w_shape[1];
const int needed = (N + WARPS * RPW - 1) / (WARPS * RPW);
if ((int)blockIdx.x >= needed) return;
const int row0 = (blockIdx.x * WARPS + warp) * RPW;
if (row0 >= N) return;
float sum[TOKENS][RPW] = {};
for (int col = NPT * lane; col < K; col += 32 * NPT * UNROLL) {
  uint4 wv[UNROLL][RPW];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const uint4* p = reinterpret_cast<const uint4*>(w + (int64_t)min(row0 + r, N - 1) * K + col + u * 32 * NPT);
      asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(wv[u][r].x), "=r"(wv[u][r].y), "=r"(wv[u][r].z), "=r"(wv[u][r].w) : "l"(p));
    }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
    for (int t = 0; t < TOKENS; ++t) {
      const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + (int64_t)t * K + col + u * 32 * NPT));
      const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&wv[u][r]);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 a = __bfloat1622float2(wh[j]), b = __bfloat1622float2(xh[j]);
          sum[t][r] = __fmaf_rn(a.x, b.x, sum[t][r]);
          sum[t][r] = __fmaf_rn(a.y, b.y, sum[t][r]);
        }
      }
    }
  }
}
#pragma unroll
for (int t = 0; t < TOKENS; ++t)
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    float s = sum[t][r];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffff, s, o);
    if (lane == 0 && row0 + r < N) out[(int64_t)t * N + row0 + r] = __float2bfloat16(s);
  }
"""
kernel = mx.fast.cuda_kernel(name="rows_gemv", input_names=["w", "x"], output_names=["out"], source=SRC)


def rows(w, x, rpw, unroll, extra):
    n = w.shape[0]
    m = x.shape[0]
    blocks = -(-n // (8 * rpw)) * (1 + extra)
    return kernel(inputs=[w, x], template=[("TOKENS", m), ("RPW", rpw), ("UNROLL", unroll), ("EXTRA", extra)],
                  grid=(blocks * 256, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(m, n)],
                  output_dtypes=[mx.bfloat16])[0]


if __name__ == "__main__":
    m, n, k = (int(v) for v in sys.argv[1:4])
    variants = [(1, 1, 0), (1, 2, 0), (2, 1, 0)] + ([(1, 1, 3)] if m == 1 else [])
    w = (mx.random.normal((n, k)) * 0.1).astype(mx.bfloat16)
    x = mx.random.normal((m, k)).astype(mx.bfloat16)
    mx.eval(w, x)
    ref = mx.matmul(x, w.T)
    for v in variants:
        got = rows(w, x, *v)
        err = mx.abs(got.astype(mx.float32) - ref.astype(mx.float32)).max().item()
        alone = rows(w, x[m - 1:], *v)
        same = mx.array_equal(alone, got[m - 1:]).item()
        print("variant", v, "max err", err, "last token alone same bits", same, file=sys.stderr)
    for _ in range(5): mx.eval(mx.matmul(x, w.T))
    for _ in range(5): mx.eval(ops.matmul(x, w.T))
    for v in variants:
        for _ in range(5): mx.eval(rows(w, x, *v))
