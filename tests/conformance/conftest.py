"""MLX's own tests run against the package's ops (see run_mlx_suite.py).

The copies of MLX's test files in mlx_suite/ are not collected by pytest: run
as they are, they would test MLX's ops, not ours. test_mlx_suite.py runs them,
routed, and the counts of each run are printed at the end of the session.
"""

collect_ignore = ["mlx_suite"]

SUMMARIES: list[dict] = []  # filled by test_mlx_suite.py


def pytest_terminal_summary(terminalreporter):
    if not SUMMARIES:
        return
    terminalreporter.section("MLX's test_blas.py, routed to each op")
    for s in sorted(SUMMARIES, key=lambda s: (s["backend"], s["op"], s["precision"])):
        terminalreporter.write_line(
            f"{s['op']:>14} {s['precision']:<7} on {s['backend']:<14} {s['tests']} tests: "
            f"{s['failures']} failures, {s['errors']} errors, {s['skipped']} skipped; "
            f"products through the op {s['products']}, mx.addmm through gemm {s['addmm']}, "
            f"refused (to MLX) {s['refused']}, made inside the op (to MLX) {s['inside']}")
        if s["set_aside"]:
            terminalreporter.write_line(f"{'':>15}set aside here (run_mlx_suite.py says why): {', '.join(s['set_aside'])}")
