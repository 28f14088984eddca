"""checked_metal_kernels(): inside the block, MLX's own mx.fast.metal_kernel
returns checked kernels that take and give mx.array; outside, MLX's again."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.metal_check import FindingsError, checked_metal_kernels

SCALE = "uint i = thread_position_in_grid.x;\nout[i] = x[i] * T(2);\n"
PAST_THE_END = "uint i = thread_position_in_grid.x;\nout[i] = x[i + 1];\n"


def call(source):
    # The caller of mx.fast.metal_kernel: the file whose text is searched for the source.
    kernel = mx.fast.metal_kernel(name="scale", input_names=["x"], output_names=["out"],
                                  source=source)
    x = mx.arange(64, dtype=mx.float32)
    return kernel(inputs=[x], template=[("T", mx.float32)], grid=(64, 1, 1),
                  threadgroup=(32, 1, 1), output_shapes=[x.shape], output_dtypes=[mx.float32])


def test_mlx_arrays_in_and_out_and_the_log():
    original = mx.fast.metal_kernel
    with checked_metal_kernels() as log:
        assert mx.metal.is_available() and mx.default_device() == mx.gpu
        (out,) = call(SCALE)
    assert mx.fast.metal_kernel is original and not mx.metal.is_available()
    assert isinstance(out, mx.array)
    np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(64))
    assert log.built == ["scale"] and len(log.dispatches) == 1
    log.assert_ok()


def test_a_finding_is_logged_and_named_by_the_calling_files_lines():
    with checked_metal_kernels() as log:
        call(PAST_THE_END)
    with pytest.raises(FindingsError) as err:
        log.assert_ok()
    (f,) = log.reports("scale")[0].findings
    # "\n" escapes: the string is not verbatim in this file, so its own lines.
    assert str(f.locations[0]) == ("the source of scale (built in test_checked_metal_kernels.py):2: "
                                   "out[i] = x[i + 1];")
    assert "past the end of buffer(0) x" in str(err.value)


def test_a_source_written_out_in_the_calling_file_is_named_by_its_lines():
    source = """
        uint i = thread_position_in_grid.x;
        out[i] = x[i + 1];
    """
    with checked_metal_kernels() as log:
        call(source)
    (f,) = log.reports()[0].findings
    loc = f.locations[0]
    assert loc.path == __file__
    assert open(__file__).read().splitlines()[loc.line - 1].strip() == "out[i] = x[i + 1];"


def test_raise_on_findings():
    with checked_metal_kernels(raise_on_findings=True), pytest.raises(FindingsError):
        call(PAST_THE_END)
