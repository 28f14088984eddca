"""The GitHub Actions workflow (.github/workflows/tests.yml), which cannot run
here: it must be a valid workflow (GitHub's schema, as vendored by
check-jsonschema), run this project's CI job on Linux, and run the suite on
Apple Silicon with the GPU tests required rather than skipped."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"


def test_the_workflow_is_valid():
    checker = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]
    result = subprocess.run([*checker, str(WORKFLOW)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_linux_runs_the_ci_job_and_apple_silicon_requires_metal():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    assert any("bash .ci/run" in step.get("run", "") for step in jobs["linux"]["steps"])
    mac = jobs["macos-metal"]
    assert set(mac["strategy"]["matrix"]["os"]) <= {"macos-14", "macos-15"}  # Apple Silicon images
    assert mac["env"]["MLX_SGEMM_REQUIRE_GPU"] == "metal"
    assert any("pytest" in step.get("run", "") for step in mac["steps"])


def test_a_required_gpu_that_is_missing_stops_the_run():
    env = dict(os.environ, MLX_SGEMM_REQUIRE_GPU="a-backend-no-machine-has")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "test_ci_workflow.py"),
         "-k", "nothing_matches_this"],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert "MLX_SGEMM_REQUIRE_GPU=a-backend-no-machine-has" in result.stdout + result.stderr
