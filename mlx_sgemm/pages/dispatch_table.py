"""What ``matmul`` runs, by shape, device and precision: asked of
:func:`mlx_sgemm.explain` (which asks the dispatch rule,
``mlx_sgemm.dispatch.kernel_choice``), never written by hand, in its words."""

from __future__ import annotations

import mlx.core as mx

from ..explain import explain
from .sweep_figures import shape_text

# (what the product is, M, N, K): one shape for each rule of the dispatch.
SHAPES = (
    ("one token, a 4096x4096 weight", 1, 4096, 4096),
    ("one token, a wide weight", 1, 14336, 4096),
    ("8 tokens", 8, 4096, 4096),
    ("128 tokens", 128, 4096, 4096),
    ("square", 1024, 1024, 1024),
    ("square", 2048, 2048, 2048),
    ("square", 4096, 4096, 4096),
    ("square", 8192, 8192, 8192),
)
# (column heading, explain's arguments): Hopper at both precisions, a CUDA GPU
# without wgmma, an Apple GPU.
DEVICES = (
    ("Hopper (H100, H200), float32", dict(backend="cuda")),
    ('Hopper, `precision="tf32"`', dict(backend="cuda", precision="tf32")),
    ("other NVIDIA GPUs", dict(backend="cuda", wgmma=False)),
    ("Apple GPUs", dict(backend="metal")),
)


def _plan(m: int, n: int, k: int, **where):
    # Planned from a CPU stream whatever this machine has, so that the pages
    # read the same written anywhere: a GPU here would put its own name, its
    # wgmma and its autotune cache into the plan.
    return explain((m, k), (k, n), stream=mx.cpu, **where)


def _cell(plan) -> str:
    return f"`{plan.kernel}`" + (f", K split {plan.k_splits} ways" if plan.k_splits > 1 else "")


def table() -> str:
    """A row per shape of :data:`SHAPES`, a column per device of :data:`DEVICES`."""
    lines = ["| product (M x N x K) | " + " | ".join(d for d, _ in DEVICES) + " |",
             "|---|" + "---|" * len(DEVICES)]
    for what, m, n, k in SHAPES:
        cells = [_cell(_plan(m, n, k, **where)) for _, where in DEVICES]
        lines.append(f"| {what}: {shape_text(m, n, k)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rules(devices=(0, 1)) -> str:
    """Why, for each kernel of the table's ``devices`` columns (default: Hopper
    at both precisions): explain's "chosen by" for the first shape that runs
    it, as a list."""
    seen = {}
    for device in devices:
        for _, m, n, k in SHAPES:
            plan = _plan(m, n, k, **DEVICES[device][1])
            seen.setdefault(plan.kernel, plan.chosen_by.removeprefix("rule: ").split("; K split")[0])
    return "\n".join(f"- `{kernel}`: {why}" for kernel, why in seen.items())


def explain_sample(m: int = 4096, n: int = 4096, k: int = 4096) -> str:
    """``mlx-sgemm explain MxNxK --backend cuda`` and what it prints."""
    return (f"```text\n$ mlx-sgemm explain {m}x{n}x{k} --backend cuda\n"
            f"{_plan(m, n, k, backend='cuda')}\n```")
