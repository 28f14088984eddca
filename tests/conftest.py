"""Shared test set-up.

MLX_SGEMM_REQUIRE_GPU=metal (or cuda) makes a run without that MLX backend
stop at once instead of skipping the GPU tests: a CI job on a GPU runner sets
it, so a runner that lost its GPU cannot pass by skipping.

MLX_ENABLE_TF32=0 makes ``mx.matmul`` on CUDA a true float32 product (cuBLAS
SGEMM), the accuracy baseline the GPU tests compare against. It must be set
before MLX creates its cuBLAS handles, hence here, before anything imports mlx.
"""

import dataclasses
import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import mlx.core as mx  # noqa: E402
import pytest  # noqa: E402

import mlx_sgemm  # noqa: E402
from mlx_sgemm import ops  # noqa: E402
from mlx_sgemm.build import launcher, specs  # noqa: E402
from mlx_sgemm.dispatch import device, kernel_choice  # noqa: E402

GPU_BACKEND = mlx_sgemm.backend()
HAS_GPU = GPU_BACKEND in ("metal", "cuda")

requires_gpu = pytest.mark.skipif(
    not HAS_GPU,
    reason="needs an MLX GPU backend (Metal or CUDA); this machine runs MLX on the CPU only",
)

REQUIRED_GPU = os.environ.get("MLX_SGEMM_REQUIRE_GPU", "")


def pytest_sessionstart(session):
    if REQUIRED_GPU and REQUIRED_GPU != GPU_BACKEND:
        pytest.exit(
            f"MLX_SGEMM_REQUIRE_GPU={REQUIRED_GPU}, but MLX's backend here is {GPU_BACKEND!r}: "
            "the GPU tests would skip",
            returncode=3,
        )


@dataclasses.dataclass(frozen=True)
class FakeLaunch:
    """One kernel launch the Python made on a faked GPU."""

    spec: specs.KernelSpec
    a_shape: tuple
    b_shape: tuple
    k_splits: int
    dtypes: tuple  # of the operands the kernel was handed


@pytest.fixture
def on_cpu():
    """MLX's default device set to the CPU for one test: the CPU fallback on any
    machine, and float64, which only the CPU has."""
    previous = mx.default_device()
    mx.set_default_device(mx.cpu)
    yield
    mx.set_default_device(previous)


def _fake_gpu(monkeypatch, backend: str):
    """Fake ``backend``: its launches compute with mx.matmul (so MLX's compile,
    custom functions and transforms run for real, without a GPU); yields the
    list of FakeLaunch the Python made (a replayed compiled call makes none).
    Like a kernel, a launch takes operands of its spec's element types (a
    launch handed others fails) and returns their product in float32, or
    rounded once to the spec's output type. The
    fused gemm's store (c_in, scalars) is computed as the Metal kernel's
    epilogue is written: alpha * product, plus beta * c_in only where beta != 0."""
    monkeypatch.setattr(device, "backend", lambda stream=None: backend)
    monkeypatch.setattr(device, "has_wgmma", lambda: True)
    monkeypatch.setattr(device, "name", lambda: "Fake H200" if backend == device.CUDA else "Fake Apple M2")
    launches = []

    def prepared(spec, a_shape, b_shape, k_splits):
        def run(a, b, stream, extra):
            launches.append(FakeLaunch(spec, a_shape, b_shape, k_splits, (a.dtype, b.dtype)))
            handed = tuple(str(x.dtype).rpartition(".")[2] for x in (a, b))
            assert handed == spec.operand_types, f"{spec.stage} reads {spec.operand_types}, was handed {handed}"
            # Converted to float32 exactly, as the kernels convert on load.
            c = mx.matmul(a.astype(mx.float32), b.astype(mx.float32), stream=stream)
            if "scalars" in extra:
                alpha, beta = extra["scalars"][0], extra["scalars"][1]
                c_in = mx.broadcast_to(extra["c_in"], c.shape)
                c = mx.where(beta != 0, alpha * c + beta * c_in, alpha * c)
            # Rounded once to the kernel's output type (half_wgmma's, or a
            # small-M kernel's rounding instance), or the summed K splits'.
            return c.astype(getattr(mx, spec.sum_to if k_splits > 1 and spec.sum_to else spec.output_type))
        return run

    def emulation_op(launch):
        def run(a, b, stream=None):
            launches.append(FakeLaunch(launch.spec, a.shape, b.shape, 1, (a.dtype, b.dtype)))
            return mx.matmul(a.astype(mx.float32), b.astype(mx.float32), stream=stream)
        return run

    def layer_call(spec, x_shape, w_shape):  # x @ w.T, x and W as a layer holds them
        def run(x, w, stream):
            assert (x.shape, w.shape) == (x_shape, w_shape), "a layer's operands are handed as they are"
            return prepared(spec, x_shape, w_shape[::-1], 1)(x, w.T, stream, {})
        return run

    monkeypatch.setattr(launcher, "prepared", prepared)
    monkeypatch.setattr(launcher, "layer_call", layer_call)
    monkeypatch.setattr(kernel_choice, "emulation_op", emulation_op)
    forget = lambda: (ops._compiled.cache_clear(), ops._route.cache_clear(), ops._calls.clear())  # noqa: E731
    forget()
    yield launches
    forget()


@pytest.fixture
def fake_cuda(monkeypatch):
    """A Hopper GPU on CUDA, faked (see _fake_gpu)."""
    yield from _fake_gpu(monkeypatch, device.CUDA)


@pytest.fixture
def fake_metal(monkeypatch):
    """An Apple GPU on Metal, faked (see _fake_gpu)."""
    yield from _fake_gpu(monkeypatch, device.METAL)
