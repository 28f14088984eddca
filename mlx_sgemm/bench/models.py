"""Language models of mlx-lm, built from config dicts with random weights (no
download), and what the tests and benchmarks do with them: a forward pass over
a batch of token ids, and greedy decoding through mlx-lm's own KV cache.

The models are mlx-lm's code, not ours: ``mlx_sgemm.nn.replace_linear``
swapped into them is the package used as its users use it. mlx-lm is a test
and benchmark dependency (the ``test`` extra), imported here on first use.
"""

from __future__ import annotations

import importlib
from typing import Callable

import mlx.core as mx

ARCHITECTURES = ("llama", "qwen3")

# A small model of each architecture (tests: seconds on a CPU), and one with
# the shapes of Llama 2 7B's layers (benchmarks: its products are the ones a
# user's 7B model runs, with fewer layers).
_SMALL = dict(hidden_size=64, num_hidden_layers=2, intermediate_size=160, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=256, head_dim=16)
_LLAMA_7B_SHAPES = dict(hidden_size=4096, intermediate_size=11008, num_attention_heads=32,
                        num_key_value_heads=32, vocab_size=32000, head_dim=128)
SIZES = {"small": _SMALL, "7b": _LLAMA_7B_SHAPES}


def config(architecture: str, size: str = "small", layers: int | None = None) -> dict:
    """mlx-lm's config dict for ``architecture`` at ``size`` ("small" or "7b")."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    shape = dict(SIZES[size])
    if layers is not None:
        shape["num_hidden_layers"] = layers
    return dict(model_type=architecture, rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=4096,
                tie_word_embeddings=False, **shape)


def build(architecture: str, dtype: mx.Dtype = mx.float32, size: str = "small", layers: int | None = None,
          seed: int = 0):
    """mlx-lm's model of ``architecture`` with random weights of ``dtype``."""
    module = importlib.import_module(f"mlx_lm.models.{architecture}")
    mx.random.seed(seed)
    model = module.Model(module.ModelArgs.from_dict(config(architecture, size, layers)))
    model.set_dtype(dtype)
    mx.eval(model.parameters())
    return model


def prompt(model, batch: int, length: int, seed: int = 1) -> mx.array:
    """Random token ids, (batch, length)."""
    return mx.random.randint(0, model.args.vocab_size, (batch, length), key=mx.random.key(seed))


def new_cache(model) -> list:
    from mlx_lm.models.cache import make_prompt_cache

    return make_prompt_cache(model)


def decode(model, tokens: mx.array, steps: int, feed: list[mx.array] | None = None):
    """Greedy decoding as mlx-lm generates: the prompt through the model into
    its KV cache, then ``steps`` tokens one at a time, each the argmax of the
    last logits, or ``feed``'s (a run made to follow another's tokens, so a
    near-tie cannot send two runs down different texts). Returns each step's
    logits (batch, vocab) in float32, the prompt's last position's first, and
    the tokens fed."""
    cache = new_cache(model)
    logits = model(tokens, cache=cache)[:, -1, :]
    out, fed = [logits.astype(mx.float32)], []
    for step in range(steps):
        fed.append(feed[step] if feed is not None else mx.argmax(logits, axis=-1)[:, None])
        logits = model(fed[-1], cache=cache)[:, -1, :]
        out.append(logits.astype(mx.float32))
        mx.eval(out[-1], fed[-1])
    return out, fed


def decode_step(model, tokens: mx.array) -> Callable[[], mx.array]:
    """A call that decodes one more token through a cache filled with
    ``tokens``: what a benchmark times in steady state. The cache grows by
    one position a call, as it does in generation."""
    cache = new_cache(model)
    mx.eval(model(tokens, cache=cache))
    last = [tokens[:, -1:]]

    def step() -> mx.array:
        logits = model(last[0], cache=cache)[:, -1, :]
        last[0] = mx.argmax(logits, axis=-1)[:, None]
        return last[0]

    return step
