"""What the Metal compatibility layer gives user kernels, against NumPy: SIMD-group
functions, atomics, half precision and integer arrays, MLX's indexing helpers,
and metal_kernel's arguments and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from mlx_sgemm.metal_check import metal_kernel


def run(source, inputs, outputs, grid, threadgroup=None, names=("x",), dtypes=None, **kwargs):
    kernel = metal_kernel(name="k", input_names=list(names), output_names=["out"], source=source,
                          **{k: kwargs.pop(k) for k in ("ensure_row_contiguous", "atomic_outputs")
                             if k in kwargs})
    result, report = kernel(inputs=list(inputs), output_shapes=[outputs],
                            output_dtypes=dtypes or ["float32"], grid=grid,
                            threadgroup=threadgroup or grid, **kwargs)
    report.assert_ok()
    return result[0]


SIMD_BODY = """
uint i = thread_position_in_grid.x;
float v = x[i];
out[8 * i + 0] = simd_sum(v);
out[8 * i + 1] = simd_max(v);
out[8 * i + 2] = simd_prefix_inclusive_sum(v);
out[8 * i + 3] = simd_prefix_exclusive_sum(v);
out[8 * i + 4] = simd_shuffle_down(v, 3);
out[8 * i + 5] = simd_shuffle_xor(v, 5);
out[8 * i + 6] = simd_broadcast(v, 7);
out[8 * i + 7] = float(simd_is_first());
"""


@pytest.mark.parametrize("threads", [64, 48])  # 48: the second simdgroup has 16 lanes
def test_simd_functions(threads):
    x = np.arange(threads, dtype=np.float32) * 0.5 - 3
    out = run(SIMD_BODY, [x], (threads, 8), (threads, 1, 1), dtypes=None)
    for s in range(0, threads, 32):
        lanes = x[s:s + 32]
        n = len(lanes)
        got = out[s:s + n]
        np.testing.assert_allclose(got[:, 0], lanes.sum())
        np.testing.assert_array_equal(got[:, 1], lanes.max())
        np.testing.assert_allclose(got[:, 2], np.cumsum(lanes), rtol=1e-6)
        np.testing.assert_allclose(got[:, 3], np.cumsum(lanes) - lanes, atol=1e-5)
        down = [lanes[l + 3] if l + 3 < n else lanes[l] for l in range(n)]
        np.testing.assert_array_equal(got[:, 4], down)
        xor = [lanes[l ^ 5] if (l ^ 5) < n else lanes[l] for l in range(n)]
        np.testing.assert_array_equal(got[:, 5], xor)
        np.testing.assert_array_equal(got[:, 6], lanes[7])
        np.testing.assert_array_equal(got[:, 7], [1] + [0] * (n - 1))


def test_half_inputs_and_outputs_with_a_float_template():
    """MLX's documented myexp signature: float16 arrays, T = float inside."""
    x = np.linspace(-2, 2, 40).astype(np.float16)
    out = run("uint i = thread_position_in_grid.x;\nT t = x[i];\nout[i] = metal::exp(t);\n",
              [x], x.shape, (40, 1, 1), (32, 1, 1), dtypes=["float16"], template=[("T", "float32")])
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, np.exp(x.astype(np.float32)), rtol=1e-3)


def test_integer_and_bool_arrays_scalars_and_template_values():
    x = np.arange(10, dtype=np.int64) - 5
    mask = np.arange(10) % 3 == 0
    source = ("uint i = thread_position_in_grid.x;\n"
              "out[i] = m[i] ? int(x[i]) * SCALE + offset : (FLIP ? -1 : 1);\n")
    out = run(source, [x, mask, 7], (10,), (10, 1, 1), names=("x", "m", "offset"),
              dtypes=["int32"], template=[("SCALE", 3), ("FLIP", True)])
    np.testing.assert_array_equal(out, np.where(mask, x * 3 + 7, -1))


def test_strided_input_in_place_with_elem_to_loc():
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    view = base[::2, 1::3]  # non-unit strides (elem_to_loc on a uint is unsigned: no negative ones)
    source = ("uint i = thread_position_in_grid.x;\n"
              "out[i] = x[elem_to_loc(i, x_shape, x_strides, x_ndim)];\n")
    out = run(source, [view], view.shape, (view.size, 1, 1), ensure_row_contiguous=False)
    np.testing.assert_array_equal(out, view)


def test_atomic_outputs_with_init_value():
    x = np.arange(100, dtype=np.float32)
    source = ("uint i = thread_position_in_grid.x;\n"
              "atomic_fetch_add_explicit(&out[i % 4], x[i], memory_order_relaxed);\n")
    out = run(source, [x], (4,), (100, 1, 1), (32, 1, 1), atomic_outputs=True, init_value=0.0)
    np.testing.assert_array_equal(out, [x[k::4].sum() for k in range(4)])


def test_arguments_mlx_would_refuse():
    kernel = metal_kernel(name="k", input_names=["x"], output_names=["out"], source="")
    call = {"output_shapes": [(1,)], "output_dtypes": ["float32"], "grid": (1, 1, 1), "threadgroup": (1, 1, 1)}
    with pytest.raises(ValueError, match="Expected `inputs` to have size 1 but got size 2"):
        kernel(inputs=[1.0, 2.0], **call)
    with pytest.raises(TypeError, match="float64"):
        kernel(inputs=[np.zeros(3)], **call)
    with pytest.raises(ValueError, match="grid must be three integers"):
        kernel(inputs=[1.0], **{**call, "grid": (0, 1, 1)})
    with pytest.raises(ValueError, match="at least one output"):
        metal_kernel(name="k", input_names=["x"], output_names=[], source="")
