"""mlx-lm's custom Metal kernels, a corpus no one here wrote, run unchanged in
the Metal checker through :func:`mlx_sgemm.metal_check.checked_metal_kernels`.

Every ``mx.fast.metal_kernel`` that mlx-lm (0.32) builds is a :class:`Case`:
how to call it through mlx-lm's own Python function, and what to compare it
with: mlx-lm's pure-MLX path where it keeps one (gated_delta_ops, ssm_attn,
_wkv7_step_ops, _attn_res_combine, the fallbacks of _sinkhorn and of the
losses), else a NumPy reference written here from the kernel's documented
meaning. ``clean`` says whether the checks pass, and when they do not,
``why`` says what they find. The coverage table in docs/metal-checker.md is
:func:`coverage_table` (tests/metal/test_mlx_lm_kernels.py keeps the two the
same). The kernel sources are imported from the installed mlx-lm, never copied.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable

import numpy as np

MODULES = (
    "mlx_lm.kernels.expert_routing", "mlx_lm.kernels.norm_add_norm",
    "mlx_lm.kernels.post_expert_norm_combine", "mlx_lm.kernels.qk_norm",
    "mlx_lm.kernels.qk_norm_rope", "mlx_lm.kernels.rms_norm_sigmoid_gate",
    "mlx_lm.models.gated_delta", "mlx_lm.models.ssm", "mlx_lm.models.rwkv7",
    "mlx_lm.models.kimi_k3", "mlx_lm.models.deepseek_v41", "mlx_lm.models.bitlinear_layers",
    "mlx_lm.tuner.losses",
)

# float32 kernels against float32 (or float64) references.
TOLERANCE = 2e-5

# What racecheck finds in mlx-lm's loss kernels (tuner/losses.py): the
# threadgroup array `shared` is written again before every simdgroup has read
# what it held, with no barrier between.
RACE_FORWARD = (
    "racecheck: `shared` gets the sums while other simdgroups may still read the maxima "
    "from it, and the result while they may still read the sums (the barriers between are "
    "`mem_none`, which order no threadgroup memory)")
RACE_BACKWARD = (
    "racecheck: `shared` gets the sums while other simdgroups may still read the maxima "
    "from it; under the checker's schedule one simdgroup reads a sum as a maximum, and the "
    "gradient of the second row is wrong")


@dataclasses.dataclass(frozen=True)
class Case:
    kernel: str  # the name mlx-lm gives metal_kernel
    module: str  # where mlx-lm builds it
    # Calls mlx-lm with checked kernels in place: (what it returned, the reference).
    run: Callable[[], tuple[list, list]]
    clean: bool = True
    equal: bool = True  # False: a bug the checks report makes the result differ
    why: str = ""  # when not clean: what the checks find


def _mod(name: str):
    return sys.modules[f"mlx_lm.{name}"]


def _rand(rng, *shape):
    import mlx.core as mx

    return mx.array(rng.standard_normal(shape).astype(np.float32))


def _rms(x, axis=-1, eps=1e-6):
    x = np.asarray(x, np.float64)
    return x / np.sqrt((x * x).mean(axis=axis, keepdims=True) + eps)


# ---- mlx_lm/kernels: fused kernels of the muse_spark model (no MLX path kept) ----------

HQ, HK, D = 4, 2, 64


def _qkvg(rng):
    return _rand(rng, 2, 3, 2 * (HQ + HK) * D)


def _qk_reference(qkvg, scale=0.125):
    rows = np.asarray(qkvg).reshape(2, 3, 2 * (HQ + HK), D)
    q = _rms(rows[:, :, :HQ]) * scale
    k = _rms(rows[:, :, HQ:HQ + HK])
    return q, k


def _qk_norm():
    qkvg = _qkvg(np.random.default_rng(1))
    got = _mod("kernels.qk_norm").qk_norm(qkvg, n_heads=HQ, n_kv_heads=HK, head_dim=D,
                                          eps=1e-6, query_scale=0.125)
    return got, list(_qk_reference(qkvg))


def _qk_norm_rope():
    import mlx.core as mx

    qkvg = _qkvg(np.random.default_rng(2))
    got = _mod("kernels.qk_norm_rope").qk_norm_rope(
        qkvg, n_heads=HQ, n_kv_heads=HK, head_dim=D, eps=1e-6, query_scale=0.125,
        rope_base=10000.0, offset=5)
    want = []
    for x in _qk_reference(qkvg):  # (batch, tokens, heads, D): rope runs along tokens
        t = mx.array(np.swapaxes(x, 1, 2).astype(np.float32))
        want.append(np.swapaxes(np.asarray(mx.fast.rope(t, D, traditional=True, base=10000.0,
                                                        scale=1.0, offset=5)), 1, 2))
    return got, want


def _expert_routing():
    rng = np.random.default_rng(3)
    logits, bias, k = _rand(rng, 3, 40), _rand(rng, 40), 4
    inds, weights = _mod("kernels.expert_routing").expert_routing(
        logits, bias, top_k=k, multiplier=1.5, score_eps=1e-20, route_scale=2.0)
    scores = 1 / (1 + np.exp(-1.5 * np.asarray(logits, np.float64)))
    top = np.argsort(-(scores + np.asarray(bias)), axis=-1, kind="stable")[:, :k]
    w = np.take_along_axis(scores, top, -1)
    return [inds, weights], [top, w / (w.sum(-1, keepdims=True) + 1e-20) * 2.0]


def _post_expert_norm_combine():
    rng = np.random.default_rng(4)
    experts, weights, norm_w = _rand(rng, 2, 3, 96), _rand(rng, 2, 3), _rand(rng, 96)
    out = _mod("kernels.post_expert_norm_combine").post_expert_norm_combine(
        experts.reshape(2, 1, 3, 96), weights.reshape(2, 1, 3), norm_weight=norm_w, eps=1e-6)
    normed = _rms(np.asarray(experts) * np.asarray(norm_w))
    return [out], [(normed * np.asarray(weights)[..., None]).sum(-2).reshape(2, 1, 96)]


def _rms_norm_sigmoid_gate():
    rng = np.random.default_rng(5)
    x, gate = _rand(rng, 1, 2, 3, 64), _rand(rng, 1, 3, 128)
    out = _mod("kernels.rms_norm_sigmoid_gate").rms_norm_sigmoid_gate(x, gate, eps=1e-6)
    normed = np.swapaxes(_rms(x), 1, 2).reshape(1, 3, 128)
    return [out], [normed / (1 + np.exp(-np.asarray(gate, np.float64)))]


def _norm_add_inputs(rng):
    import mlx.nn as nn

    branch, stream = _rand(rng, 2, 96), _rand(rng, 2, 96)
    alpha, beta, post_w = _rand(rng, 96), _rand(rng, 96), _rand(rng, 96)
    norm = nn.RMSNorm(96, eps=1e-6)
    norm.weight = _rand(rng, 96)
    new = (np.asarray(alpha) * np.asarray(stream)
           + np.asarray(beta) * _rms(np.asarray(branch) * np.asarray(post_w)))
    return (branch, stream, alpha, beta, post_w, norm), new


def _norm_add_norm():
    (branch, stream, alpha, beta, post_w, norm), new = _norm_add_inputs(np.random.default_rng(6))
    got = _mod("kernels.norm_add_norm").norm_add_norm(
        branch, stream, alpha=alpha, beta=beta, post_weight=post_w, post_eps=1e-6, next_norm=norm)
    return list(got), [new, _rms(new) * np.asarray(norm.weight)]


def _norm_add():
    (branch, stream, alpha, beta, post_w, _), new = _norm_add_inputs(np.random.default_rng(7))
    got, none = _mod("kernels.norm_add_norm").norm_add_norm(
        branch, stream, alpha=alpha, beta=beta, post_weight=post_w, post_eps=1e-6, next_norm=None)
    assert none is None
    return [got], [new]


def _pre_norm():
    import mlx.core as mx

    (_, stream, _, _, _, norm), _ = _norm_add_inputs(np.random.default_rng(8))
    got = _mod("kernels.norm_add_norm").pre_norm(stream, norm, dtype=mx.float32)
    return [got], [_rms(stream) * np.asarray(norm.weight)]


# ---- mlx_lm/models: recurrences with an MLX path in the same file ----------------------

def _gated_delta(*, vectorized=False, masked=False, variant="gated_delta_kernel", dk=64):
    import mlx.core as mx

    gd = _mod("models.gated_delta")
    rng = np.random.default_rng(9)
    B, T, Hk, Hv, Dv = 1, 3, 1, 2, 8
    q, k = _rand(rng, B, T, Hk, dk) * 0.3, _rand(rng, B, T, Hk, dk) * 0.3
    v = _rand(rng, B, T, Hv, Dv)
    g = mx.sigmoid(_rand(rng, B, T, Hv, dk) if vectorized else _rand(rng, B, T, Hv))
    beta = mx.sigmoid(_rand(rng, B, T, Hv))
    state = _rand(rng, B, Hv, Dv, dk) * 0.3
    mask = mx.array(np.array([[True, False, True]])) if masked else None
    y, s = getattr(gd, variant)(q, k, v, g, beta, state, mask)
    y_ref, s_ref = gd.gated_delta_ops(q, k, v, g, beta, state, mask)
    if masked:  # a masked token's y is 0 from the kernel and left as computed by the ops
        y, y_ref = y * mask[..., None, None], y_ref * mask[..., None, None]
    return [y, s], [y_ref, s_ref]


def _ssm():
    ssm = _mod("models.ssm")
    rng = np.random.default_rng(10)
    n, h, d, groups, ds = 1, 4, 8, 2, 64
    args = (_rand(rng, n, 1, h, d), _rand(rng, h) * 0.1, _rand(rng, n, 1, groups, ds),
            _rand(rng, n, 1, groups, ds), _rand(rng, h), _rand(rng, n, 1, h), _rand(rng, h),
            _rand(rng, n, h, d, ds))
    got = ssm.ssm_update(*args)  # the kernel path: one token with a state, "on a GPU"
    return list(got), list(ssm.ssm_attn(*args))


def _wkv7():
    import mlx.core as mx

    rwkv7 = _mod("models.rwkv7")
    rng = np.random.default_rng(11)
    B, T, H, Dh = 1, 2, 2, 32
    r, k, v = (_rand(rng, B, T, H, Dh) * 0.3 for _ in range(3))
    w = mx.sigmoid(_rand(rng, B, T, H, Dh))
    a = rwkv7.l2_norm(_rand(rng, B, T, H, Dh))
    b = -a * mx.sigmoid(_rand(rng, B, T, H, Dh))
    state = _rand(rng, B, H, Dh, Dh) * 0.3
    y, s = rwkv7.wkv7_kernel(r, w, k, v, a, b, state)
    ys, s_ref = [], state
    for t in range(T):  # rwkv7's own loop (RWKV7TimeMix._wkv7, off the GPU)
        y_t, s_ref = rwkv7._wkv7_step_ops(r[:, t], w[:, t], k[:, t], v[:, t], a[:, t], b[:, t],
                                          s_ref)
        ys.append(y_t)
    return [y, s], [mx.stack(ys, axis=1).reshape(y.shape), s_ref]


def _attn_res_mix():
    import mlx.core as mx

    kimi = _mod("models.kimi_k3")
    rng = np.random.default_rng(12)
    K, N, Dm = 3, 2, 96
    blocks = kimi.ResidualBlocks(1e-6)
    for _ in range(K):
        blocks.append(_rand(rng, N, Dm))
    partial, w_eff = _rand(rng, N, Dm), _rand(rng, Dm) * 0.1
    got = kimi._attn_res_mix(blocks, partial, w_eff, 1e-6)
    want = kimi._attn_res_combine(blocks.raw, blocks.inv_rms, partial, w_eff, 1e-6)
    return [got], [mx.array(np.asarray(want))]


def _sinkhorn():
    import mlx.core as mx

    ds = _mod("models.deepseek_v41")
    comb = mx.abs(_rand(np.random.default_rng(13), 5, 4, 4))
    eps = mx.array([1e-6])
    got = ds._sinkhorn(comb, iters=3, eps=eps)
    want = comb / (mx.sum(comb, axis=-2, keepdims=True) + eps)  # _sinkhorn off the GPU
    for _ in range(2):
        want = want / (mx.sum(want, axis=-1, keepdims=True) + eps)
        want = want / (mx.sum(want, axis=-2, keepdims=True) + eps)
    return [got], [want]


def _bitlinear():
    import mlx.core as mx

    bl = _mod("models.bitlinear_layers")
    rng = np.random.default_rng(14)
    in_features, out_features = 256, 8
    ternary = rng.integers(0, 3, size=(out_features, in_features)).astype(np.uint8)
    # Four rows per byte: row r + j * out/4 in bits 2j..2j+1 (the kernel's unpacking).
    quarter = out_features // 4
    packed = sum(ternary[j * quarter:(j + 1) * quarter] << (2 * j) for j in range(4))
    layer = bl.BitLinear(in_features, out_features, bias=False)
    layer.weight = mx.array(packed.astype(np.uint8))
    layer.weight_scale = mx.array([0.5])
    x = _rand(rng, 3, in_features)
    return [layer(x)], [np.asarray(x, np.float64) @ (ternary.astype(np.float64) - 1).T * 0.5]


# ---- mlx_lm/tuner/losses: custom functions with a fallback off the GPU -----------------

def _losses(name: str, backward: bool):
    import mlx.core as mx
    import mlx.nn as nn

    losses = _mod("tuner.losses")
    rng = np.random.default_rng(15)
    q, p = _rand(rng, 2, 300), _rand(rng, 2, 300)
    loss = getattr(losses, f"{name}_div_loss")

    def fallback(q, p):  # the formula losses.py uses off the GPU
        lq = q - mx.logsumexp(q, axis=-1, keepdims=True)
        lp = p - mx.logsumexp(p, axis=-1, keepdims=True)
        if name == "kl":
            return nn.losses.kl_div_loss(lq, lp, axis=-1, reduction="none")
        lm = lp + mx.log(1 + mx.exp(lq - lp)) - mx.log(2).astype(q.dtype)
        return 0.5 * (nn.losses.kl_div_loss(lm, lp, axis=-1, reduction="none")
                      + nn.losses.kl_div_loss(lm, lq, axis=-1, reduction="none"))

    if not backward:
        return [loss(q, p)], [fallback(q, p)]
    cot = _rand(rng, 2)
    _, (dq,) = mx.vjp(lambda q: loss(q, p), [q], [cot])
    _, (dq_ref,) = mx.vjp(lambda q: fallback(q, p), [q], [cot])
    return [dq], [dq_ref]


CASES = (
    Case("expert_routing", "mlx_lm/kernels/expert_routing.py", _expert_routing),
    Case("norm_add_norm", "mlx_lm/kernels/norm_add_norm.py", _norm_add_norm),
    Case("norm_add", "mlx_lm/kernels/norm_add_norm.py", _norm_add),
    Case("norm_add_norm_pre_norm", "mlx_lm/kernels/norm_add_norm.py", _pre_norm),
    Case("post_expert_norm_combine", "mlx_lm/kernels/post_expert_norm_combine.py",
         _post_expert_norm_combine),
    Case("qk_norm", "mlx_lm/kernels/qk_norm.py", _qk_norm),
    Case("qk_norm_rope", "mlx_lm/kernels/qk_norm_rope.py", _qk_norm_rope),
    Case("rms_norm_sigmoid_gate", "mlx_lm/kernels/rms_norm_sigmoid_gate.py",
         _rms_norm_sigmoid_gate),
    Case("gated_delta_step", "mlx_lm/models/gated_delta.py", _gated_delta),
    Case("gated_delta_step_mask", "mlx_lm/models/gated_delta.py",
         lambda: _gated_delta(masked=True)),
    Case("gated_delta_step_vec", "mlx_lm/models/gated_delta.py",
         lambda: _gated_delta(vectorized=True)),
    Case("gated_delta_step_vec_mask", "mlx_lm/models/gated_delta.py",
         lambda: _gated_delta(vectorized=True, masked=True)),
    Case("gated_delta_step_xtree", "mlx_lm/models/gated_delta.py",
         lambda: _gated_delta(variant="gated_delta_kernel_xtree")),
    Case("gated_delta_step_packed_btree", "mlx_lm/models/gated_delta.py",
         lambda: _gated_delta(dk=128)),
    Case("ssm_kernel", "mlx_lm/models/ssm.py", _ssm),
    Case("wkv7_kernel", "mlx_lm/models/rwkv7.py", _wkv7),
    Case("attnres_mix", "mlx_lm/models/kimi_k3.py", _attn_res_mix),
    Case("deepseek_v41_sinkhorn", "mlx_lm/models/deepseek_v41.py", _sinkhorn),
    Case("bitlinear_matmul", "mlx_lm/models/bitlinear_layers.py", _bitlinear),
    Case("kl_forward", "mlx_lm/tuner/losses.py", lambda: _losses("kl", False),
         clean=False, why=RACE_FORWARD),
    Case("kl_backward", "mlx_lm/tuner/losses.py", lambda: _losses("kl", True),
         clean=False, equal=False, why=RACE_BACKWARD),
    Case("js_forward", "mlx_lm/tuner/losses.py", lambda: _losses("js", False),
         clean=False, why=RACE_FORWARD),
    Case("js_backward", "mlx_lm/tuner/losses.py", lambda: _losses("js", True),
         clean=False, equal=False, why=RACE_BACKWARD),
)


def coverage_table() -> str:
    """The table docs/metal-checker.md gives, from CASES (markdown)."""
    rows = ["| kernel | mlx-lm file | runs | equals its reference | checks clean |",
            "|---|---|---|---|---|"]
    for c in CASES:
        rows.append(f"| `{c.kernel}` | `{c.module}` | yes | {'yes' if c.equal else 'no'} | "
                    f"{'yes' if c.clean else 'no: ' + c.why} |")
    n, equal, clean = len(CASES), sum(c.equal for c in CASES), sum(c.clean for c in CASES)
    rows.append("")
    rows.append(f"{n} of {n} kernels run, {equal} of {n} equal their reference, "
                f"{clean} of {n} check clean.")
    return "\n".join(rows) + "\n"
