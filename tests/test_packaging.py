"""The release artefacts: ``python -m build`` makes an sdist, then the wheel
from that sdist, and the wheel carries what an installed package needs
(the kernel sources, the recorded runs the CLI shows, the Metal checker's C++
runtime and headers, py.typed, LICENSE)."""

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import mlx_sgemm

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("build", reason="the test extra's `build` makes the sdist and wheel")
pytest.importorskip("hatchling", reason="the test extra's `hatchling` is the build backend (no isolation here)")


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    # Without isolation: CI has no need to fetch the backend again, and the
    # default (sdist, then the wheel built from the unpacked sdist) is kept.
    run = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(ROOT)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return out


def test_the_wheel_carries_what_the_package_needs(dist):
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    kernels = {f"mlx_sgemm/kernels/{p.relative_to(ROOT / 'kernels')}" for p in (ROOT / "kernels").rglob("*")
               if p.is_file()}
    assert kernels and kernels <= names, sorted(kernels - names)
    recorded = {f"mlx_sgemm/recorded/{p.name}" for p in (ROOT / "benchmarks" / "results").glob("bench-*.csv")}
    assert recorded and recorded <= names
    assert "mlx_sgemm/py.typed" in names
    # The Metal checker's runtime and headers, compiled on the user's machine.
    checker = {f"mlx_sgemm/metal_check/{p.relative_to(ROOT / 'mlx_sgemm' / 'metal_check')}"
               for p in (ROOT / "mlx_sgemm" / "metal_check").rglob("*")
               if p.is_file() and p.suffix in (".cpp", ".h", "")}
    assert {"mlx_sgemm/metal_check/metal_compat.h", "mlx_sgemm/metal_check/scheduler.cpp",
            "mlx_sgemm/metal_check/include/metal_stdlib"} <= checker
    assert checker <= names, sorted(checker - names)
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert not any(n.startswith("tests/") for n in names)


def test_the_sdist_and_the_version(dist):
    (sdist,) = dist.glob("*.tar.gz")
    assert sdist.name == f"mlx_sgemm-{mlx_sgemm.__version__}.tar.gz"
    names = tarfile.open(sdist).getnames()
    top = f"mlx_sgemm-{mlx_sgemm.__version__}"
    for needed in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "kernels/cuda/tile_wgmma.cu"):
        assert f"{top}/{needed}" in names


def test_the_installed_mlx_is_one_the_pin_allows():
    """The MLX range pyproject.toml states (README, "Supported MLX") holds the
    MLX these tests run with: CI runs them on the newest in the range and on
    the oldest (.github/workflows/tests.yml)."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")
    from packaging.requirements import Requirement

    import mlx.core as mx

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (mlx,) = [Requirement(d) for d in deps if Requirement(d).name == "mlx"]
    assert mx.__version__ in mlx.specifier, f"MLX {mx.__version__} is outside the pin {mlx.specifier}"


def test_a_model_imports_neither_matplotlib_nor_tqdm():
    """Both are the bench extra's: the ops, layers and explain must not need them."""
    code = ("import sys, mlx.core as mx, mlx_sgemm, mlx_sgemm.nn; "
            "mlx_sgemm.matmul(mx.ones((2, 3)), mx.ones((3, 2))); mlx_sgemm.nn.Linear(3, 2)(mx.ones((1, 3))); "
            "mlx_sgemm.explain((1, 8), (8, 8)); mlx_sgemm.distributed; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'tqdm')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
