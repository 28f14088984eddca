"""What runs without a GPU: validation, errors, the CPU fallback, source loading."""

import mlx.core as mx
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm import ops
from mlx_sgemm.bench import accuracy
from mlx_sgemm.build import sources, specs
from mlx_sgemm.dispatch import device

from .conftest import HAS_GPU

OPS = [getattr(mlx_sgemm, s) for s in specs.STAGES]
ALLOWED = "float32, float16 or bfloat16"


@pytest.mark.parametrize("op", [*OPS, mlx_sgemm.matmul], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [mx.int32, mx.uint8, mx.bool_, mx.float64, mx.complex64],
                         ids=lambda d: str(d).rpartition(".")[2])
def test_wrong_dtype_names_operand_and_dtype(op, dtype):
    good = mx.ones((3, 3))
    name = str(dtype).rpartition(".")[2]
    bad = good.astype(dtype, stream=mx.cpu)  # float64 exists on the CPU only
    with pytest.raises(TypeError, match=rf"a must have dtype {ALLOWED}, got {name}$"):
        op(bad, good)
    with pytest.raises(TypeError, match=rf"b must have dtype {ALLOWED}, got {name}$"):
        op(good, bad)


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_non_array_is_a_type_error(op):
    with pytest.raises(TypeError, match=rf"a must be an mlx.core.array of dtype {ALLOWED}, got ndarray"):
        op(np.ones((2, 2), np.float32), mx.ones((2, 2)))
    with pytest.raises(TypeError, match=r"b must be an mlx.core.array"):
        op(mx.ones((2, 2)), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_shape_errors_name_both_shapes(op):
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 6\)"):
        op(mx.ones((3, 4)), mx.ones((5, 6)))
    with pytest.raises(ValueError, match="at least one dimension"):
        op(mx.array(1.0), mx.ones((2,)))


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_cpu_stream_uses_fallback(op):
    a, b = accuracy.random_operands((5, 7), (3, 7, 2))
    c = op(a, b, stream=mx.cpu)
    assert device.backend(mx.cpu) == "cpu-fallback"
    assert accuracy.relative_error(c, a, b) < 1e-6


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU report")
def test_backend_reports_cpu_fallback_without_gpu():
    assert mlx_sgemm.backend() == "cpu-fallback"


def test_backend_rejects_bad_stream():
    with pytest.raises(TypeError, match="stream"):
        mlx_sgemm.backend("gpu")


def test_every_spec_has_its_sources():
    for backend in specs.BACKENDS:
        assert specs.specs(backend), backend
        for spec in specs.specs(backend):
            body = spec.source()
            assert "c[" in body or "t.C" in body or "store" in body, spec
            assert sources.includes(backend, spec.source_file), spec  # it names its headers
            assert spec.header().endswith(sources.headers_text(backend, spec.source_file))
            assert "#include \"" not in body, spec
            # MLX adds shape/stride arguments only when the body names them.
            assert "a_strides" in body and "b_strides" in body, spec


def test_cuda_headers_include_only_each_other():
    """MLX compiles a custom kernel with NVRTC, which finds no C++ standard
    headers (<cstdint> and the like): a CUDA header may include only the
    project's own, by quotes. (nvcc, which the compile checks use, finds them,
    so only the GPU would notice.)"""
    for path in sorted((sources.kernels_dir() / "cuda").rglob("*.cu*")):
        system = [line for line in path.read_text().splitlines() if line.lstrip().startswith("#include <")]
        assert not system, f"{path.name}: {system}"


def test_every_kernel_file_has_a_spec():
    for backend, suffix in (("cuda", ".cu"), ("metal", ".metal")):
        files = {p.name for p in (sources.kernels_dir() / backend).glob("*" + suffix)}
        used = {s.source_file for s in specs.specs(backend) + specs.emulation_specs(backend)
                + (specs.half_wgmma_specs() + specs.half_mma_specs() + specs.half_gemv_specs()
                   + specs.half_gemv_one_row_specs() + [specs.cuda_tf32_round()] if backend == "cuda" else [])}
        assert files == used, f"{backend}: files without spec {files - used}, missing {used - files}"


@pytest.mark.parametrize("make_stream", [lambda: mx.Device(mx.cpu), lambda: mx.default_stream(mx.cpu)],
                         ids=["Device", "Stream"])
def test_a_new_object_for_the_same_stream_reuses_the_work(make_stream):
    """MLX's Device and Stream objects hash by identity: a call that names its
    stream with a new object each time must still find what was built for it."""
    a, b = mx.ones((3, 4)), mx.ones((4, 5))
    streams = [make_stream() for _ in range(20)]  # all alive: no address is reused
    mlx_sgemm.matmul(a, b, stream=streams[0])
    before = ops._differentiable.cache_info().currsize
    for s in streams:
        assert mlx_sgemm.matmul(a, b, stream=s).shape == (3, 5)
    assert ops._differentiable.cache_info().currsize == before
