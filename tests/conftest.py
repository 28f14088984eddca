"""Shared test set-up.

MLX_SGEMM_REQUIRE_GPU=metal (or cuda) makes a run without that MLX backend
stop at once instead of skipping the GPU tests: a CI job on a GPU runner sets
it, so a runner that lost its GPU cannot pass by skipping.

MLX_ENABLE_TF32=0 makes ``mx.matmul`` on CUDA a true float32 product (cuBLAS
SGEMM), the accuracy baseline the GPU tests compare against. It must be set
before MLX creates its cuBLAS handles, hence here, before anything imports mlx.
"""

import os

os.environ.setdefault("MLX_ENABLE_TF32", "0")

import pytest  # noqa: E402

import mlx_sgemm  # noqa: E402

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
