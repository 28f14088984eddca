"""``python -m mlx_sgemm``: the command line (:mod:`mlx_sgemm.cli`)."""

import sys

from .cli import main

sys.exit(main())
