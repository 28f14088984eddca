"""Metal Shading Language a kernel author writes, which the checker must take:
each kernel compiles, checks clean, and matches NumPy. (Vectors through
device and threadgroup pointers, scalar-vector arithmetic, integer bit
functions, ballots, vector math, half literals, quad-group functions,
simdgroup matrices of half.)"""

from __future__ import annotations

import numpy as np

from mlx_sgemm.metal_check import metal_kernel

X = np.arange(64, dtype=np.float32)


def run(source, x=X, grid=64, out_dtype="float32", out_size=None):
    kernel = metal_kernel(name="k", input_names=["x"], output_names=["out"], source=source,
                          source_path="k.metal")
    outputs, report = kernel(inputs=[x], output_shapes=[(out_size or x.size,)],
                             output_dtypes=[out_dtype], grid=(grid, 1, 1),
                             threadgroup=(grid, 1, 1))
    report.assert_ok()
    return outputs[0]


def test_float4_loads_and_stores_through_device_pointers():
    out = run("uint i = thread_position_in_grid.x;\n"
              "const device float4* x4 = (const device float4*)x;\n"
              "device float4* o4 = (device float4*)out;\n"
              "float4 v = x4[i];\n"
              "o4[i] = v * 2.0f;\n"
              "o4[i].w = x4[i].x;\n"
              "o4[i] += float4(1.0f);\n", grid=16)
    want = X * 2 + 1
    want[3::4] = X[0::4] + 1
    np.testing.assert_array_equal(out, want)


def test_threadgroup_float4_arrays():
    out = run("threadgroup float4 tile[16];\n"
              "uint i = thread_position_in_grid.x;\n"
              "tile[i] = ((const device float4*)x)[i];\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "((device float4*)out)[i] = tile[15 - i] - tile[i];\n", grid=16)
    rows = X.reshape(16, 4)
    np.testing.assert_array_equal(out, (rows[::-1] - rows).ravel())


def test_a_scalar_times_a_vector_and_a_device_scalar_with_a_vector():
    out = run("uint i = thread_position_in_grid.x;\n"
              "float4 v = float4(1.0f, 2.0f, 3.0f, 4.0f);\n"
              "float4 w = x[i] * v + 2 * v + v * 0.5f - 3.0f / v;\n"
              "out[i] = w.x + w.y + w.z + w.w;\n")
    v = np.array([1, 2, 3, 4], np.float32)
    np.testing.assert_allclose(out, [(x * v + 2 * v + v * 0.5 - 3 / v).sum() for x in X], rtol=1e-6)


def test_integer_bit_functions():
    x = np.array([0, 1, 6, 0x80000000, 0xFFFFFFFF, 12345], dtype=np.uint32)
    source = ("uint i = thread_position_in_grid.x;\nuint u = x[i];\n"
              "out[3 * i] = popcount(u);\nout[3 * i + 1] = clz(u);\nout[3 * i + 2] = ctz(u);\n")
    out = run(source, x=x, grid=6, out_dtype="uint32", out_size=18).reshape(6, 3)
    for u, (pop, lead, trail) in zip(x.tolist(), out.tolist()):
        assert pop == bin(u).count("1")
        assert lead == (32 - u.bit_length())
        assert trail == (32 if u == 0 else (u & -u).bit_length() - 1)


def test_simd_ballot():
    source = ("uint i = thread_position_in_grid.x;\n"
              "simd_vote vote = simd_ballot(x[i] > 40.0f);\n"
              "uint64_t bits = uint64_t(simd_vote::vote_t(vote));\n"
              "out[i] = float(bits >> 16) + (vote.any() ? 0.5f : 0.0f) + (vote.all() ? 0.25f : 0.0f);\n")
    out = run(source)
    first = sum(1 << lane for lane in range(32) if X[lane] > 40)  # none: 0
    second = sum(1 << lane for lane in range(32) if X[32 + lane] > 40)
    np.testing.assert_array_equal(out[:32], float(first >> 16))
    np.testing.assert_array_equal(out[32:], float(second >> 16) + 0.5)


def test_vector_clamp_length_normalize_fract_step():
    source = ("uint i = thread_position_in_grid.x;\n"
              "float3 v = float3(x[i] * 0.1f, 1.0f, -2.0f);\n"
              "float3 c = clamp(v, float3(0.5f), float3(3.0f));\n"
              "float3 d = clamp(v, 0.0f, 1.0f);\n"
              "float3 n = normalize(v);\n"
              "out[i] = length(v) + n.x + c.x + c.z + d.x + fract(x[i] * 0.3f) + step(5.0f, x[i])"
              " + fract(v).z + step(float3(2.0f), v).x;\n")
    out = run(source)
    v = np.stack([X * np.float32(0.1), np.ones(64), -2 * np.ones(64)], 1).astype(np.float64)
    norm = np.linalg.norm(v, axis=1)
    want = (norm + v[:, 0] / norm + np.clip(v[:, 0], 0.5, 3) + 0.5 + np.clip(v[:, 0], 0, 1)
            + np.mod(X * np.float32(0.3), 1) + (X >= 5) + 0.0 + (v[:, 0] >= 2))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_half_literals():
    out = run("uint i = thread_position_in_grid.x;\nhalf h = 1.5h;\n"
              "out[i] = float(h * half(x[i]) + 0.25h + 2h);\n")
    np.testing.assert_array_equal(out, (np.float16(1.5) * X.astype(np.float16) + np.float16(2.25)
                                        ).astype(np.float32))


def test_quad_functions():
    out = run("uint i = thread_position_in_grid.x;\n"
              "out[i] = quad_sum(x[i]) + 100.0f * quad_shuffle(x[i], 1) + 1000.0f * quad_max(x[i])"
              " + 10000.0f * quad_shuffle_xor(x[i], 2);\n")
    quads = X.reshape(16, 4)
    want = (np.repeat(quads.sum(1), 4) + 100 * np.repeat(quads[:, 1], 4)
            + 1000 * np.repeat(quads.max(1), 4) + 10000 * quads[:, [2, 3, 0, 1]].ravel())
    np.testing.assert_array_equal(out, want)


def test_simdgroup_matrix_of_half():
    source = ("threadgroup half t[64];\n"
              "uint i = thread_position_in_grid.x;\n"
              "t[i] = half(x[i] * 0.125f);\nt[i + 32] = half(x[i + 32] * 0.125f);\n"
              "simdgroup_barrier(mem_flags::mem_threadgroup);\n"
              "simdgroup_half8x8 a;\nsimdgroup_load(a, t, 8);\n"
              "simdgroup_half8x8 c;\nsimdgroup_multiply(c, a, a);\n"
              "simdgroup_store(c, out_h, 8);\n"
              "out[i] = float(out_h[i]);\nout[i + 32] = float(out_h[i + 32]);\n")
    source = "threadgroup half out_h[64];\n" + source.replace(
        "simdgroup_store(c, out_h, 8);\n", "simdgroup_store(c, out_h, 8);\n"
        "simdgroup_barrier(mem_flags::mem_threadgroup);\n")
    out = run(source, grid=32)
    a = (X * 0.125).astype(np.float16).astype(np.float32).reshape(8, 8)
    np.testing.assert_allclose(out.reshape(8, 8), (a @ a).astype(np.float16), rtol=1e-3)


def test_swizzles_conversions_and_select_on_vectors_in_device_and_threadgroup_memory():
    out = run("threadgroup half4 t[16];\n"
              "uint i = thread_position_in_grid.x;\n"
              "const device float4* x4 = (const device float4*)x;\n"
              "t[i] = half4(x4[i]);\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "float4 v = float4(x4[i].xy, float2(t[i].zw));\n"
              "((device float4*)out)[i] = select(float4(-1.0f), v, v > float4(10.0f));\n", grid=16)
    np.testing.assert_array_equal(out, np.where(X > 10, X, -1))
