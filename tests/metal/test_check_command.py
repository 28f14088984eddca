"""``mlx-sgemm check-kernel``: arguments, exit statuses, the report; and the
README's commands and the worked example, run as written (the docs cannot rot)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mlx_sgemm import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "check_kernel"

COPY = "uint i = thread_position_in_grid.x;\nout[i] = x[i] * SCALE;\n"


@pytest.fixture
def kernel_dir(tmp_path):
    (tmp_path / "copy.metal").write_text(COPY)
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    return tmp_path


def main(kernel_dir, *args):
    return cli.main(["check-kernel", str(kernel_dir / "copy.metal"), "--inputs",
                     f"x={kernel_dir / 'x.npy'}", "--template", "SCALE=2", *args])


def test_a_clean_kernel_exits_0_and_saves_its_outputs(kernel_dir, capsys):
    status = main(kernel_dir, "--grid", "64", "--threadgroup", "32,1,1", "--outputs", "out:64:float32",
                  "--save-outputs", str(kernel_dir / "outs"))
    assert status == 0
    assert "ERROR SUMMARY: 0 errors" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(kernel_dir / "outs" / "out.npy"), 2 * np.arange(64))


def test_a_finding_exits_1_with_the_file_and_line(kernel_dir, capsys):
    status = main(kernel_dir, "--grid", "65,1,1", "--threadgroup", "32,1,1", "--outputs", "out:64:float32")
    out = capsys.readouterr().out
    assert status == 1
    assert f"at {kernel_dir / 'copy.metal'}:2: out[i] = x[i] * SCALE;" in out
    assert "past the end of buffer(0) x" in out


def test_json_report(kernel_dir, capsys):
    status = main(kernel_dir, "--grid", "64,1,1", "--threadgroup", "64,1,1", "--outputs", "out:8x8:float32",
                  "--json")
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["ok"] and report["findings"] == []
    assert report["grid"] == [64, 1, 1]


def test_a_kernel_that_does_not_compile_exits_2_naming_its_line(kernel_dir, capsys):
    """No verdict on the kernel: not 1, which says a check found a bug."""
    (kernel_dir / "copy.metal").write_text("uint i = thread_position_in_grid.x;\nout[i] = y[i];\n")
    status = main(kernel_dir, "--grid", "64", "--threadgroup", "64", "--outputs", "out:64:float32")
    err = capsys.readouterr().err
    assert status == 2
    assert f"{kernel_dir / 'copy.metal'}:2:" in err and "'y'" in err


def test_a_missing_compiler_exits_2(kernel_dir, capsys, monkeypatch):
    monkeypatch.setenv("METAL_HARNESS_CXX", str(kernel_dir / "no-such-clang"))
    monkeypatch.setattr("mlx_sgemm.metal_check.compiler._build_dir", None)
    status = main(kernel_dir, "--grid", "64", "--threadgroup", "64", "--outputs", "out:64:float32")
    assert status == 2 and "mlx-sgemm: " in capsys.readouterr().err


def test_an_unmodelled_attribute_exits_2(kernel_dir, capsys):
    (kernel_dir / "copy.metal").write_text("[[texture(0)]] uint i = 0;\nout[i] = x[i];\n")
    status = main(kernel_dir, "--grid", "1", "--threadgroup", "1", "--outputs", "out:1:float32")
    assert status == 2 and "does not model" in capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["--grid", "0,1,1", "--threadgroup", "1", "--outputs", "out:1:float32"], "argument --grid: three integers >= 1"),
    (["--grid", "1", "--threadgroup", "1", "--outputs", "out:4:float64"], "dtype 'float64' is none of"),
    (["--grid", "1", "--threadgroup", "1", "--outputs", "out:4"], "an output is NAME:SHAPE:DTYPE"),
    (["--grid", "1", "--threadgroup", "1", "--outputs", "x:4:float32"], "names must differ"),
    (["--grid", "1", "--threadgroup", "1"], "the following arguments are required: --outputs"),
])
def test_bad_arguments_are_one_line_and_exit_2(kernel_dir, capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        main(kernel_dir, *args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("mlx-sgemm: error: ") and err.count("\n") == 1 and message in err


def test_missing_input_file_is_a_bad_argument(kernel_dir, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check-kernel", str(kernel_dir / "copy.metal"), "--inputs", "x=missing.npy",
                  "--grid", "1", "--threadgroup", "1", "--outputs", "out:1:float32"])
    assert exit_.value.code == 2 and "missing.npy: no such file" in capsys.readouterr().err


# ---- the documentation ------------------------------------------------------------------

def doc_commands(path: Path, heading: str) -> str:
    """The first bash block after ``heading`` in a document, pip's line left out
    (the tests run on the installed package)."""
    section = path.read_text().split(heading, 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)[1]
    return "".join(line + "\n" for line in block.splitlines() if not line.startswith("pip install"))


def test_the_checker_docs_commands_run_in_a_scratch_folder_and_leave_the_repository_alone(tmp_path):
    """docs/metal-checker.md's commands, run from the repository's root as a
    reader would: they work, their files land in the scratch folder, and the
    repository gains nothing (no x.npy, no checked/)."""
    commands = doc_commands(ROOT / "docs" / "metal-checker.md", "## From the command line")
    assert "mktemp -d" in commands
    before = sorted(p.name for p in ROOT.iterdir())
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "TMPDIR": str(tmp_path), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(["bash", "-e", "-c", commands], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, f"{run.stdout[-3000:]}{run.stderr[-3000:]}"
    assert sorted(p.name for p in ROOT.iterdir()) == before
    (scratch,) = tmp_path.iterdir()
    assert "ERROR SUMMARY: 0 errors" in run.stdout and "racecheck: race" in run.stdout
    assert "softmax.metal:34: if (lane == 0) partial[sg] = sum;" in run.stdout
    x, y = np.load(scratch / "x.npy"), np.load(scratch / "checked" / "out.npy")
    expected = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, expected / expected.sum(axis=1, keepdims=True), rtol=1e-5)
