"""Shape logic: mx.matmul's rules, batch merging, params and grid (no GPU needed)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlx_sgemm.dispatch import problem
from mlx_sgemm.dispatch.problem import plan


@pytest.mark.parametrize(
    "a, b, out",
    [
        ((3, 4), (4, 5), (3, 5)),
        ((4,), (4, 5), (5,)),
        ((3, 4), (4,), (3,)),
        ((4,), (4,), ()),
        ((2, 3, 4), (4, 5), (2, 3, 5)),
        ((3, 1, 7, 4), (2, 4, 5), (3, 2, 7, 5)),
        ((1, 1, 7, 4), (4, 5), (1, 1, 7, 5)),
        ((0, 4), (4, 5), (0, 5)),
        ((3, 0), (0, 5), (3, 5)),
        ((2, 0, 3, 4), (4, 5), (2, 0, 3, 5)),
    ],
)
def test_output_shape_matches_numpy(a, b, out):
    assert plan(a, b).out_shape == out
    assert np.matmul(np.ones(a), np.ones(b)).shape == out


@pytest.mark.parametrize(
    "a, b, match",
    [
        ((3, 4), (5, 6), r"\(3, 4\).*\(5, 6\)"),
        ((2, 3, 4), (3, 4, 5), "cannot be broadcast"),
        ((), (4,), "at least one dimension"),
        ((4,), (), "at least one dimension"),
    ],
)
def test_bad_shapes_raise_with_both_shapes(a, b, match):
    with pytest.raises(ValueError, match=match):
        plan(a, b)


def test_one_d_operands_become_row_and_column():
    p = plan((4,), (4, 5))
    assert (p.a_shape, p.b_shape, p.M, p.N, p.K) == ((1, 4), (4, 5), 1, 5, 4)
    p = plan((3, 4), (4,))
    assert (p.a_shape, p.b_shape, p.M, p.N) == ((3, 4), (4, 1), 3, 1)


def test_batch_dims_that_broadcast_alike_merge():
    p = plan((2, 3, 7, 4), (2, 3, 4, 5))
    assert p.batch_shape == (6,) and p.a_shape == (6, 7, 4) and p.b_shape == (6, 4, 5)
    p = plan((3, 1, 7, 4), (2, 4, 5))
    assert p.batch_shape == (3, 2)
    assert p.a_shape == (3, 1, 7, 4) and p.b_shape == (1, 2, 4, 5)
    p = plan((5, 7, 4), (4, 5))  # b broadcast over the whole batch
    assert p.batch_shape == (5,) and p.b_shape == (1, 4, 5)
    p = plan((1, 1, 7, 4), (4, 5))  # unit batch dims vanish
    assert p.batch_shape == () and p.a_shape == (7, 4)


def test_params_layout():
    p = plan((3, 1, 33, 17), (2, 17, 65))
    params = p.params(16, 32)
    assert params[problem.P_M : problem.P_K + 1] == [33, 65, 17]
    assert params[problem.P_TILES_M] == 3 and params[problem.P_TILES_N] == 3
    assert params[problem.P_BATCH_NDIM] == 2
    assert params[problem.P_BATCH_SHAPE : problem.P_BATCH_SHAPE + 2] == [3, 2]
    assert params[problem.P_BATCH_SHAPE + 2] == 17  # K not split: one split of all of K


def test_k_splits_cover_k_in_aligned_stretches():
    p = plan((300, 1000), (1000, 7))
    assert p.kernel_out_shape(1) == (300, 7) and p.kernel_out_shape(3) == (3, 300, 7)
    for splits in (2, 3, 7):
        length = p.k_split_length(splits)
        assert length % 32 == 0 and (splits - 1) * length < 1000 <= splits * length
        assert p.params(16, 16, splits)[problem.P_BATCH_SHAPE] == length
    tiles = p.tiles(16, 16)[0] * p.tiles(16, 16)[1]
    assert p.grid(16, 16, (256, 1, 1), 3)[0] == 3 * tiles * 256
    # Short parameter lists are padded so Metal always passes them in `device` memory.
    assert len(plan((3, 4), (4, 5)).params(8, 8)) >= problem.MIN_PARAMS


def test_grid_is_whole_threadgroups_one_per_tile():
    p = plan((3, 1, 33, 17), (2, 17, 65))
    gx, gy, gz = p.grid(16, 32, (32, 8, 1))
    assert (gx % 32, gy % 8, gz) == (0, 0, 1)
    assert gx // 32 == 6 * 3 * 3  # batch x tiles_m x tiles_n


def test_grid_too_large_is_refused():
    p = plan((2**20, 2**16), (2**16, 2**20))
    with pytest.raises(ValueError, match="more than one launch can address"):
        p.grid(8, 32, (256, 1, 1))


def test_empty_problems():
    assert plan((0, 4), (4, 5)).empty
    assert plan((3, 0), (0, 5)).empty  # K = 0: zeros, no launch
    assert not plan((1, 1), (1, 1)).empty


dims = st.integers(min_value=1, max_value=4)


@settings(max_examples=200, deadline=None)
@given(
    batch_a=st.lists(dims, max_size=4),
    batch_b=st.lists(dims, max_size=4),
    m=dims, n=dims, k=dims,
    data=st.data(),
)
def test_plan_agrees_with_numpy_broadcasting(batch_a, batch_b, m, n, k, data):
    # Make the batch shapes broadcastable by putting 1s where they clash.
    nd = min(len(batch_a), len(batch_b))
    for i in range(1, nd + 1):
        if batch_a[-i] != batch_b[-i] and data.draw(st.booleans()):
            batch_a[-i] = 1
        elif batch_a[-i] != batch_b[-i]:
            batch_b[-i] = 1
    a_shape, b_shape = (*batch_a, m, k), (*batch_b, k, n)
    p = plan(a_shape, b_shape)
    a = np.random.rand(*a_shape)
    b = np.random.rand(*b_shape)
    expected = np.matmul(a, b)
    assert p.out_shape == expected.shape
    # The merged operands the kernel sees give the same product.
    merged = np.matmul(a.reshape(p.a_shape), b.reshape(p.b_shape))
    assert merged.shape == p.kernel_out_shape()
    np.testing.assert_allclose(merged.reshape(p.out_shape), expected)
    assert p.batch == math.prod(p.batch_shape)
    assert len(p.a_shape) == len(p.b_shape) == len(p.batch_shape) + 2
