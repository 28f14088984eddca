"""The autotuner on a real GPU: every candidate compiles, runs accurately and is
timed; matmul then uses the stored winner."""

import mlx.core as mx
import pytest

import mlx_sgemm
from mlx_sgemm.bench import accuracy
from mlx_sgemm.dispatch import kernel_choice, tuning_cache
from mlx_sgemm.dispatch.problem import plan

from ..conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.gpu]


@pytest.mark.parametrize("precision", ["float32", "tf32"])
def test_autotune_then_matmul_uses_the_winner(tmp_path, monkeypatch, precision):
    monkeypatch.setenv(tuning_cache.CACHE_ENV, str(tmp_path / "autotune.json"))
    a, b = accuracy.random_operands((300, 2048), (2048, 500))
    result = mlx_sgemm.autotune(a, b, precision=precision, repeats=3)
    print(precision, result["choice"], {k: f"{v * 1e6:.0f} us" for k, v in result["seconds"].items()})
    backend = mlx_sgemm.backend()
    keys = {launch.key for launch in kernel_choice.candidates(backend, precision, plan(a.shape, b.shape))}
    assert result["choice"] in keys and not result["rejected"]
    a2, b2 = accuracy.random_operands((280, 2000), (2000, 470))  # same shape class
    assert kernel_choice.chooser(precision)(backend, plan(a2.shape, b2.shape)).key == result["choice"]
    with mlx_sgemm.poisoned_outputs():
        c = mlx_sgemm.matmul(a2, b2, precision=precision)
    bound = 4 * max(accuracy.relative_error(mx.matmul(a2, b2), a2, b2), 2.0**-24)
    if precision == "tf32":
        bound = 2.0**-10
    assert accuracy.relative_error(c, a2, b2) <= bound
