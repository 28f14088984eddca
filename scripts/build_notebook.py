"""Execute notebooks/benchmark.ipynb in its recorded mode and write it back with
its outputs, so the committed notebook shows what its code produces.

    python scripts/build_notebook.py            # rewrite notebooks/benchmark.ipynb
    python scripts/build_notebook.py --check    # exit 1 if the committed outputs are not current

The recorded mode (MLX_SGEMM_NOTEBOOK_RECORDED=1, see mlx_sgemm.bench.notebook)
shows the newest runs recorded on a GPU in benchmarks/results/, whatever
machine builds it; the model section runs on this machine's MLX backend and
says which. Cells run in a temporary folder (the figures' PNG files go there;
the notebook embeds them). Volatile metadata (execution times, the Python
version) is left out, so a rebuild with the same results changes only the
embedded images' bytes, if anything.

Needs the test extra (nbclient, nbformat, ipykernel, matplotlib, scikit-learn).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "benchmark.ipynb"
RECORDED_ENV = "MLX_SGEMM_NOTEBOOK_RECORDED"  # mlx_sgemm.bench.notebook.RECORDED_ENV
# Outputs whose text depends on the machine that ran them (the model section:
# its backend, and floating-point results of that machine); --check compares
# only their kinds.
MACHINE_DEPENDENT = "machine-dependent"


def execute(path: Path = NOTEBOOK, timeout: int = 600, recorded: bool = True):
    """The notebook at ``path``, executed from a clean state (nbclient) in
    recorded mode, or with ``recorded`` False in the mode the machine's backend
    decides (live on a GPU), with volatile metadata removed. The kernel imports
    this checkout's mlx_sgemm."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    saved = {k: os.environ.get(k) for k in (RECORDED_ENV, "PYTHONPATH")}
    if recorded:
        os.environ[RECORDED_ENV] = "1"
    else:
        os.environ.pop(RECORDED_ENV, None)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved["PYTHONPATH"]]))
    try:
        with tempfile.TemporaryDirectory() as folder:
            nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                    resources={"metadata": {"path": folder}}).execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def comparable(nb) -> list:
    """What must match between two runs of the notebook: each cell's type and
    source, and for each output its kind and text (images by presence only:
    their bytes depend on the matplotlib build); for cells tagged
    machine-dependent, the kinds alone."""
    cells = []
    for cell in nb.cells:
        outputs = []
        loose = MACHINE_DEPENDENT in cell.metadata.get("tags", [])
        for out in cell.get("outputs", []):
            kind = (out.output_type, out.get("name"), tuple(sorted(out.get("data", {}))))
            text = out.get("text", "") + "".join(
                out.get("data", {}).get(mime, "") for mime in ("text/markdown", "text/plain"))
            outputs.append(kind if loose else (kind, text))
        cells.append((cell.cell_type, cell.source, outputs))
    return cells


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed outputs, write nothing")
    args = parser.parse_args(argv)
    import nbformat

    built = execute()
    if args.check:
        current = comparable(built) == comparable(nbformat.read(NOTEBOOK, as_version=4))
        print("outputs are current" if current else f"{NOTEBOOK.name}: outputs are stale; run {Path(__file__).name}")
        return 0 if current else 1
    nbformat.write(built, NOTEBOOK)
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}: {len(built.cells)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
