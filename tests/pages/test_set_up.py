"""The README's set-up: its two commands are the ones CI runs and the ones
install_size.py measures, and neither installs from a package index."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def set_up_commands() -> list[str]:
    section = (ROOT / "README.md").read_text().split("## Set-up", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.DOTALL)[1].strip().splitlines()


def test_ci_runs_the_readmes_test_command():
    first, test = set_up_commands()
    assert first == 'python -m pip install -e ".[cpu,bench]" && mlx-sgemm bench'
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert all(half.strip() in lines for half in test.split("&&")), test


def test_the_measured_installs_are_the_readmes():
    spec = importlib.util.spec_from_file_location("install_size", ROOT / "benchmarks" / "install_size.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    extras = [re.search(r'"\.\[(.*?)\]"', line)[1] for line in set_up_commands()]
    assert [e for _, e in module.COMMANDS] == extras
