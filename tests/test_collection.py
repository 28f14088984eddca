"""Every test file under tests/ is collected by a plain ``python -m pytest``.

pytest skips some folder names by default ("build" among them), so a test
folder that mirrors a package folder of that name would silently never run.
"""

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent
# MLX's own test files: run by tests/conformance/test_mlx_suite.py, routed to
# the package's ops, never collected as they are (they would test MLX's ops).
MLX_SUITE = TESTS / "conformance" / "mlx_suite"


def test_every_test_file_is_collected():
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-rs", "-p", "no:cacheprovider", str(TESTS)],
        capture_output=True, text=True, cwd=TESTS.parent, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    lines = run.stdout.splitlines()
    collected = {line.split("::")[0] for line in lines if "::" in line}
    # A module that skips itself at import (a missing optional package) counts: it was found.
    collected |= {line.split()[2].rstrip(":").split(":")[0] for line in lines if line.startswith("SKIPPED")}
    on_disk = {str(p.relative_to(TESTS.parent)) for p in TESTS.rglob("test_*.py")
               if MLX_SUITE not in p.parents}
    assert on_disk - collected == set(), "test files pytest does not collect"
