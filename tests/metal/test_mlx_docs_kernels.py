"""MLX's documented custom kernels (mlx_docs_kernels/, from MLX's
docs/src/dev/custom_metal_kernels.rst) run unchanged in the checker, called as
the documentation calls them, against NumPy.

One finding is real: the documentation's grid_sample reads all four corners of
x before masking the ones outside the image, so at the image's edge it reads
out of bounds (past the end of x for the bottom rows). The checker reports
those reads at their lines; with the reads guarded, the kernel is clean.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mlx_sgemm.metal_check import metal_kernel

KERNELS = Path(__file__).parent / "mlx_docs_kernels"


def kernel(name, input_names, output_names, source=None, **kwargs):
    path = KERNELS / f"{name}.metal"
    return metal_kernel(name=name, input_names=input_names, output_names=output_names,
                        source=source if source is not None else path.read_text(),
                        source_path=path.name, **kwargs)


def test_myexp():
    a = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float16)
    (b,), report = kernel("myexp", ["inp"], ["out"])(
        inputs=[a], template=[("T", "float32")], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
        output_shapes=[a.shape], output_dtypes=[a.dtype])
    report.assert_ok()
    np.testing.assert_allclose(b, np.exp(a.astype(np.float32)), rtol=1e-3)


def test_myexp_strided():
    a = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float16)[::2]
    (b,), report = kernel("myexp_strided", ["inp"], ["out"], ensure_row_contiguous=False)(
        inputs=[a], template=[("T", "float32")], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
        output_shapes=[a.shape], output_dtypes=[a.dtype])
    report.assert_ok()
    np.testing.assert_allclose(b, np.exp(a.astype(np.float32)), rtol=1e-3)


def corners(x, grid):
    """The bilinear corners of each sample: (n, ys, xs, weights, inside) per corner."""
    n, h, w, _ = x.shape
    ix = ((grid[..., 0].astype(np.float64) + 1) * w - 1) / 2
    iy = ((grid[..., 1].astype(np.float64) + 1) * h - 1) / 2
    x0, y0 = np.floor(ix).astype(int), np.floor(iy).astype(int)
    batch = np.broadcast_to(np.arange(n)[:, None, None], ix.shape)
    for dy in (0, 1):
        for dx in (0, 1):
            xs, ys = x0 + dx, y0 + dy
            weight = (1 - np.abs(ix - xs)) * (1 - np.abs(iy - ys))
            inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
            yield batch, np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1), weight * inside


def grid_sample_ref(x, grid):
    return sum(wt[..., None] * x[b, ys, xs] for b, ys, xs, wt in corners(x, grid))


def sample_inputs(seed=1, shape=(2, 6, 8, 3), samples=(4, 5)):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    grid = rng.uniform(-1, 1, (shape[0], *samples, 2)).astype(np.float32)
    return x, grid


def run_grid_sample(source=None):
    x, grid = sample_inputs()
    out_shape = (*grid.shape[:3], x.shape[3])
    (out,), report = kernel("grid_sample", ["x", "grid"], ["out"], source)(
        inputs=[x, grid], template=[("T", np.float32)], output_shapes=[out_shape],
        output_dtypes=[np.float32], grid=(int(np.prod(out_shape)), 1, 1), threadgroup=(256, 1, 1))
    return x, grid, out, report


def test_grid_sample_reads_out_of_bounds_at_the_edge():
    x, grid, out, report = run_grid_sample()
    assert report.findings and report.completed
    source = (KERNELS / "grid_sample.metal").read_text().splitlines()
    for f in report.findings:
        assert (f.check, f.kind) == ("memcheck", "out_of_bounds"), report
        assert "read" in f.message and "buffer(0) x" in f.message
        (loc,) = f.locations
        assert loc.path == "grid_sample.metal" and loc.text.startswith("T I_")
        assert source[loc.line - 1] == loc.text
    np.testing.assert_allclose(out, grid_sample_ref(x, grid), atol=1e-5)


def test_grid_sample_with_guarded_reads_is_clean():
    source = (KERNELS / "grid_sample.metal").read_text()
    for corner in ("nw", "ne", "sw", "se"):
        read = f"T I_{corner} = x[base_idx + iy_{corner} * h_stride + ix_{corner} * w_stride];"
        inside = (f"iy_{corner} >= 0 && iy_{corner} <= H - 1 && ix_{corner} >= 0 && "
                  f"ix_{corner} <= W - 1")
        assert read in source
        source = source.replace(read, f"T I_{corner} = {inside} ? "
                                      f"x[base_idx + iy_{corner} * h_stride + ix_{corner} * w_stride] : 0;")
    x, grid, out, report = run_grid_sample(source)
    report.assert_ok()
    np.testing.assert_allclose(out, grid_sample_ref(x, grid), atol=1e-5)


@pytest.mark.parametrize("init_value", [0, None])
def test_grid_sample_grad(init_value):
    """The vjp with init_value=0 as documented: clean, and x's gradient is the
    reference's. Without init_value the atomic adds read uninitialized outputs."""
    x, grid = sample_inputs(shape=(2, 6, 8, 3))
    rng = np.random.default_rng(2)
    cot = rng.standard_normal((*grid.shape[:3], x.shape[3])).astype(np.float32)
    c_padded = 32
    (x_grad, grid_grad), report = kernel(
        "grid_sample_grad", ["x", "grid", "cotangent"], ["x_grad", "grid_grad"], atomic_outputs=True)(
        inputs=[x, grid, cot], template=[("T", "float32")], output_shapes=[x.shape, grid.shape],
        output_dtypes=["float32", "float32"],
        grid=(int(np.prod(grid.shape[:3])) * c_padded, 1, 1), threadgroup=(256, 1, 1),
        init_value=init_value)
    if init_value is None:
        assert {f.check for f in report.findings} == {"initcheck"}, report
        assert any("atomic_fetch_add_explicit(&x_grad" in f.locations[0].text
                   for f in report.findings if f.locations)
        return
    report.assert_ok()
    expected = np.zeros(x.shape)
    for b, ys, xs, wt in corners(x, grid):
        np.add.at(expected, (b, ys, xs), wt[..., None] * cot)
    np.testing.assert_allclose(x_grad, expected, atol=1e-5)
    # The grid's gradient against central differences of the reference (even W
    # and H: the documented kernel multiplies by W / 2 in integers).
    eps, numeric = 1e-5, np.zeros(grid.shape)  # small: a sample may sit near a kink
    for idx in np.ndindex(grid.shape):
        step = np.zeros(grid.shape)
        step[idx] = eps
        numeric[idx] = ((grid_sample_ref(x, grid + step) - grid_sample_ref(x, grid - step)) * cot
                        ).sum() / (2 * eps)
    np.testing.assert_allclose(grid_grad, numeric, atol=2e-3)
