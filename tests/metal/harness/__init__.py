"""What the Metal tests share: this package's kernels launched in the checker
(gemm.py), operands, error checks and edited specs (checks.py)."""
