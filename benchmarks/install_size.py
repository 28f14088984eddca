"""What the README's two commands install: each one's packages in a fresh
virtual environment, and their size on disk.

    python benchmarks/install_size.py [--out benchmarks/results/install-size-<date>.csv]

Why: the first command should install what showing the benchmark needs (MLX,
the package, plotting), the test command the test tools on top; the README
states both sizes (scripts/generate_pages.py reads them from the CSV). Each
command's pip install runs in a new venv made from this Python, from this
checkout; its size is that of the venv's site-packages, without pip itself.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (what it is for, the extras it installs): the README's set-up commands.
COMMANDS = (("show the benchmark", "cpu,bench"), ("run the tests", "cpu,test"))


def size_mb(folder: Path) -> float:
    skip = {"pip", "setuptools"}
    total = 0
    for path in folder.rglob("*"):
        top = path.relative_to(folder).parts[0].split("-")[0]
        if path.is_file() and not path.is_symlink() and top not in skip:
            total += path.stat().st_size
    return total / 1e6


def measure(extras: str) -> tuple[float, int]:
    """MB and package count of ``pip install -e .[extras]`` in a fresh venv."""
    with tempfile.TemporaryDirectory() as folder:
        venv = Path(folder) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[{extras}]"], check=True)
        listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], check=True,
                                capture_output=True, text=True).stdout.split()
        (site,) = (venv / "lib").glob("python*/site-packages")
        return size_mb(site), len(listed)


def main(argv=None) -> int:
    from mlx_sgemm.bench.results import write_table

    today = datetime.date.today().isoformat()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / f"install-size-{today}.csv")
    args = parser.parse_args(argv)
    rows = []
    for purpose, extras in COMMANDS:
        mb, packages = measure(extras)
        rows.append({"date": today, "python": platform.python_version(), "platform": f"{sys.platform}-{platform.machine()}",
                     "purpose": purpose, "extras": extras, "packages": packages, "megabytes": round(mb)})
    write_table(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
