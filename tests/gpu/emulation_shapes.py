"""mx.matmul's shape classes (1-D operands, broadcast batch dimensions) as the
emulations' GPU tests check them: the result's shape and dtype are
mx.matmul's, and its values float64's within float32's accuracy."""

import mlx.core as mx
import numpy as np

SHAPES = [((65,), (65, 33)), ((17, 65), (65,)), ((3, 17, 65), (65, 33)), ((2, 1, 9, 40), (3, 40, 7))]


def assert_like_mx_matmul(product, a_shape, b_shape):
    """``product(a, b)`` on normal float32 operands of these shapes."""
    rng = np.random.default_rng(5)
    a = mx.array(rng.standard_normal(a_shape).astype(np.float32))
    b = mx.array(rng.standard_normal(b_shape).astype(np.float32))
    c = product(a, b)
    ref = np.matmul(np.array(a).astype(np.float64), np.array(b).astype(np.float64))
    assert c.shape == ref.shape and c.dtype == mx.float32
    assert np.allclose(np.array(c), ref, rtol=1e-5, atol=1e-5)
