"""Every CUDA kernel compiles for Hopper (sm_90a) exactly as MLX would build it.

The source is written by mlx_sgemm.signatures from the same KernelSpec the
registry hands to mx.fast.cuda_kernel. nvcc stands in for NVRTC (same front
end); MLX's utils.cuh, which lives inside libmlx, is replaced by a stub with the
two types our kernels use. The GPU run compiles the real thing.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mlx_sgemm import signatures, specs
from mlx_sgemm.problem import plan

STUB = Path(__file__).parent / "cuda_stub"
NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(
    NVCC is None and not os.environ.get("MLX_SGEMM_REQUIRE_NVCC"),
    reason="nvcc (CUDA 13) is not installed",
)


def compile_cuda(source: str, tmp_path: Path) -> str:
    if NVCC is None:
        pytest.fail("MLX_SGEMM_REQUIRE_NVCC is set but nvcc is not on PATH")
    src = tmp_path / "kernel.cu"
    src.write_text(source)
    result = subprocess.run(
        [NVCC, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
         "-Xptxas", "-v", "-I", str(STUB), "-c", str(src), "-o", str(tmp_path / "k.o")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


@pytest.mark.parametrize("spec", specs.specs("cuda"), ids=lambda s: s.stage)
def test_cuda_kernel_compiles_without_spills(spec, tmp_path):
    p = plan((3, 1, 33, 17), (2, 17, 65))
    inputs = signatures.operand_infos(p.a_shape, p.b_shape, len(p.params(1, 1)))
    report = compile_cuda(signatures.cuda_source(spec, inputs), tmp_path)
    assert "spill stores" in report  # ptxas printed its resource report
    assert "0 bytes spill stores" in report, report


def test_generated_signature_is_mlx_shaped():
    spec = specs.spec("tile_16", "cuda")
    p = plan((5, 7), (7, 3))
    src = signatures.cuda_source(
        spec, signatures.operand_infos(p.a_shape, p.b_shape, len(p.params(16, 16)))
    )
    assert "__global__ void custom_kernel_sgemm_tile_16_16(" in src
    assert "const float* a,\n    const __grid_constant__ Shape a_shape," in src
    assert "const int32_t* params,\n    float* c) {" in src
    assert "constexpr int TILE = 16;" in src
