"""The examples run (quick versions), on whatever device MLX has."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_digits_mlp_quick():
    pytest.importorskip("sklearn", reason="scikit-learn provides the digits data")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "digits_mlp.py"), "--quick"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mlx_sgemm.nn.Linear" in result.stdout and "accuracy gap" in result.stdout
