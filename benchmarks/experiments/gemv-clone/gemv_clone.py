"""MLX's GEMV cloned as a custom kernel, and variants, beside mx.matmul
and ops.matmul (half_gemv), x @ W.T bfloat16, for ncu.
    python benchmarks/experiments/gemv-clone/gemv_clone.py N K  -> 5 calls each kernel"""
import sys
import mlx.core as mx
from mlx_sgemm import ops

SRC = r"""
constexpr int WARPS = 8;
using V = typename Vec<NPT>::type;
const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
const int N = w_shape[0], K = w_shape[1];
const int row0 = (blockIdx.x * WARPS + warp) * RPW;
if (row0 >= N) return;
float sum[RPW] = {};
for (int col = NPT * lane; col < K; col += 32 * NPT * UNROLL) {
  V wv[UNROLL][RPW], xv[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const V* p = reinterpret_cast<const V*>(w + (int64_t)(row0 + r) * K + col + u * 32 * NPT);
      if (STREAM) {
        if constexpr (NPT == 8) {
          uint4 v;
          asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                       : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
          wv[u][r] = *reinterpret_cast<V*>(&v);
        } else {
          uint2 v;
          asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0,%1}, [%2];"
                       : "=r"(v.x), "=r"(v.y) : "l"(p));
          wv[u][r] = *reinterpret_cast<V*>(&v);
        }
      } else {
        wv[u][r] = *p;
      }
    }
    xv[u] = *reinterpret_cast<const V*>(x + col + u * 32 * NPT);
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&xv[u]);
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&wv[u][r]);
#pragma unroll
      for (int j = 0; j < NPT / 2; ++j) {
        const float2 a = __bfloat1622float2(wh[j]), b = __bfloat1622float2(xh[j]);
        sum[r] += a.x * b.x;
        sum[r] += a.y * b.y;
      }
    }
  }
}
#pragma unroll
for (int r = 0; r < RPW; ++r) {
  float s = sum[r];
#pragma unroll
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffff, s, o);
  if (lane == 0 && row0 + r < N) out[row0 + r] = __float2bfloat16(s);
}
"""
HDR = "template <int N> struct Vec { using type = uint4; };\ntemplate <> struct Vec<4> { using type = uint2; };\n"
kernel = mx.fast.cuda_kernel(name="clone_gemv", input_names=["w", "x"], output_names=["out"], source=SRC, header=HDR)
VARIANTS = [(4, 1, 1, 0), (8, 1, 1, 0), (8, 1, 2, 0), (8, 2, 1, 0), (8, 1, 4, 0), (8, 2, 2, 0), (8, 1, 1, 1), (8, 1, 2, 1), (8, 2, 2, 1), (8, 4, 1, 0)]

def clone(w, x, npt, rpw, unroll, stream):
    n = w.shape[0]
    blocks = -(-n // (8 * rpw))
    return kernel(inputs=[w, x], template=[("NPT", npt), ("RPW", rpw), ("UNROLL", unroll), ("STREAM", stream)],
                  grid=(blocks * 256, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(n,)],
                  output_dtypes=[mx.bfloat16])[0]

if __name__ == "__main__":
    n, k = int(sys.argv[1]), int(sys.argv[2])
    w = (mx.random.normal((n, k)) * 0.1).astype(mx.bfloat16)
    x = mx.random.normal((1, k)).astype(mx.bfloat16)
    mx.eval(w, x)
    ref = mx.matmul(x, w.T)
    for v in VARIANTS:
        got = clone(w, x[0], *v)
        err = mx.abs(got.astype(mx.float32) - ref[0].astype(mx.float32)).max().item()
        print("variant", v, "max err", err, file=sys.stderr)
    for _ in range(5): mx.eval(mx.matmul(x, w.T))
    for _ in range(5): mx.eval(ops.matmul(x, w.T))
    for v in VARIANTS:
        for _ in range(5): mx.eval(clone(w, x[0], *v))
