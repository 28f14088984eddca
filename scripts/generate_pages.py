"""Write the generated parts of the README, docs/current-figures.md,
docs/journey.md and the notebook's prose from benchmarks/results/ and the
dispatch rule (mlx_sgemm.pages).

    python scripts/generate_pages.py            # rewrite the pages that changed
    python scripts/generate_pages.py --check    # exit 1 if a committed page is stale

Run it after recording a run or changing the rule. The notebook's outputs are
scripts/build_notebook.py's (run it after this one when the notebook changed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from mlx_sgemm.pages import documents

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed pages, write nothing")
    args = parser.parse_args(argv)
    if args.check:
        stale = documents.stale(ROOT)
        for name in stale:
            print(f"{name}: stale; run python scripts/{Path(__file__).name}")
        return 1 if stale else 0
    for name in documents.write(ROOT):
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
