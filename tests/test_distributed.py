"""Sharded products and tensor-parallel layers across two processes.

Two local processes on MLX's ring backend over loopback (mlx.launch), each
checking mlx_sgemm.distributed.matmul (all three splits) and the sharded layers
against a single-process mx.matmul, gradients included; see
tests/distributed_check.py, which also runs on GPUs (NCCL).
"""

import subprocess
import sys
from pathlib import Path

CHECK = Path(__file__).parent / "distributed_check.py"


def test_two_ranks_on_the_ring_backend():
    launch = [sys.executable, "-c", "from mlx._distributed_utils.launch import main; main()"]
    result = subprocess.run(
        [*launch, "--backend", "ring", "-n", "2", "--", sys.executable, str(CHECK)],
        capture_output=True, text=True, timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for rank in (0, 1):
        assert f"rank {rank}/2" in output and "distributed checks OK" in output, output
