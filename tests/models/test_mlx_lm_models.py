"""Real models that no one here wrote: mlx-lm's Llama and Qwen3, built from
config dicts with random weights, with every nn.Linear swapped by
``mlx_sgemm.nn.replace_linear``. The logits of a batch of prompts and of 32
decode steps through mlx-lm's own KV cache must stay within the dtype's
tolerance of the unmodified model's.

Without a GPU the swapped layers run on the CPU fallback and on a faked CUDA
GPU (tests/conftest.py), where the package's Python (kernel choice, padding,
compiled calls) runs for the model's real shapes and each launch is computed by
MLX. On a GPU they run our kernels, against MLX's float32 layers with TF32 off
(tests/conftest.py sets MLX_ENABLE_TF32=0).
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn
import numpy as np
import pytest

import mlx_sgemm
from mlx_sgemm.bench import models

from ..conftest import HAS_GPU, requires_gpu

pytest.importorskip("mlx_lm", reason="mlx-lm (the test extra) builds the models")

DTYPES = {"float32": mx.float32, "bfloat16": mx.bfloat16}
# Largest |ours - MLX's| over the largest |MLX's logit|: float32-accurate
# products differ from MLX's float32 ones by summation order alone (~1e-6 of a
# logit after two layers); bfloat16 layers round every product's output to 8
# bits, and a rounding that goes the other way moves the next layer's input
# by 2^-8 of itself.
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2}
DECODE_STEPS = 32
BACKENDS = ["gpu"] if HAS_GPU else ["cpu_fallback", "cuda"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    if request.param == "cuda":
        request.getfixturevalue("fake_cuda")
    return request.param


def linear_layers(model) -> list:
    return [m for _, m in model.named_modules() if isinstance(m, mlx.nn.Linear)]


def swapped(model, **kwargs):
    layers = len(linear_layers(model))
    mlx_sgemm.nn.replace_linear(model, **kwargs)
    ours = [m for m in linear_layers(model) if isinstance(m, mlx_sgemm.nn.Linear)]
    assert len(ours) == layers >= 7 * model.args.num_hidden_layers + 1, "replace_linear missed a layer"
    return model


def relative_gap(ours: mx.array, theirs: mx.array) -> float:
    ours, theirs = (np.array(x.astype(mx.float32), np.float64) for x in (ours, theirs))
    assert ours.shape == theirs.shape and np.isfinite(ours).all(), "wrong shape, or NaN/Inf in the logits"
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("architecture", models.ARCHITECTURES)
def test_logits_of_a_batch_match_the_unmodified_model(architecture, dtype, backend):
    model = models.build(architecture, DTYPES[dtype])
    tokens = models.prompt(model, batch=3, length=37)
    theirs = model(tokens)
    ours = swapped(model)(tokens)
    assert ours.dtype == theirs.dtype == DTYPES[dtype]
    assert relative_gap(ours, theirs) <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("architecture", models.ARCHITECTURES)
def test_decoding_through_the_kv_cache_matches_at_every_step(architecture, dtype, backend):
    model = models.build(architecture, DTYPES[dtype])
    tokens = models.prompt(model, batch=2, length=11)
    theirs, fed = models.decode(model, tokens, DECODE_STEPS)
    ours, _ = models.decode(swapped(model), tokens, DECODE_STEPS, feed=fed)
    gaps = [relative_gap(o, t) for o, t in zip(ours, theirs)]
    assert len(gaps) == DECODE_STEPS + 1
    assert max(gaps) <= TOLERANCE[dtype], f"worst step {int(np.argmax(gaps))}: {max(gaps):.2e}"


@pytest.mark.parametrize("dtype", DTYPES)
def test_mlx_lms_generation_loop_runs_the_swapped_model(dtype, backend):
    """mlx-lm's own loop, as ``mlx_lm.generate`` runs a model (``generate_step``):
    the prompt, then each token's step built while the one before runs
    (``mx.async_eval``), on mlx-lm's generation stream. The unmodified model,
    fed the tokens it picked, gives the same log-probabilities at every step."""
    generate = pytest.importorskip("mlx_lm.generate")
    steps = 8
    model = models.build("llama", DTYPES[dtype])
    tokens = models.prompt(model, batch=1, length=11)
    made = list(generate.generate_step(tokens[0], swapped(models.build("llama", DTYPES[dtype])), max_tokens=steps))
    assert len(made) == steps
    fed = [mx.array([[token]]) for token, _ in made]
    theirs, _ = models.decode(model, tokens, steps - 1, feed=fed[:-1])
    for step, ((token, logprobs), logits) in enumerate(zip(made, theirs)):
        reference = logits[0] - mx.logsumexp(logits[0])
        assert token == int(mx.argmax(logprobs)), f"step {step}: not the greedy token"
        assert relative_gap(logprobs, reference) <= TOLERANCE[dtype], f"step {step}"


@pytest.mark.parametrize("precision", ["float32", "tf32"])
def test_precision_reaches_the_model_layers(precision, backend):
    model = swapped(models.build("llama"), precision=precision)
    assert {layer.precision for layer in linear_layers(model)} == {precision}
    mx.eval(model(models.prompt(model, batch=1, length=5)))


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("architecture", models.ARCHITECTURES)
def test_deterministic_decoding_is_the_same_in_a_batch_and_alone(architecture, dtype):
    """With deterministic=True a sequence's logits at every decode step are
    bitwise the same whether it is decoded with others (each product of M =
    3 rows) or alone (M = 1): the products are batch-invariant, and the rest
    of the model (attention, norms) works on each sequence by itself."""
    model = swapped(models.build(architecture, DTYPES[dtype]), deterministic=True)
    tokens = models.prompt(model, batch=3, length=9)
    together, fed = models.decode(model, tokens, DECODE_STEPS)
    for row in range(3):
        alone, _ = models.decode(model, tokens[row:row + 1], DECODE_STEPS, feed=[t[row:row + 1] for t in fed])
        for step, (x, y) in enumerate(zip(alone, together)):
            assert mx.array_equal(x[0], y[row]), f"sequence {row}, step {step}"
