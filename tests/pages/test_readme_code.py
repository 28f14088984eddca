"""Every Python block of the README runs as written on this machine (a CPU
one in CI), in a fresh process and an empty folder."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)


def test_the_readme_has_python_to_run():
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block {i + 1}" for i in range(len(BLOCKS))])
def test_a_readme_block_runs_as_written(code, tmp_path):
    # The checkout first, then whatever the machine's path had (the GPU machine's MLX is unpacked there).
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": path})
    assert run.returncode == 0, f"{code}\n{run.stdout[-2000:]}{run.stderr[-3000:]}"
    assert not list(tmp_path.iterdir()), "a README block left files behind"
